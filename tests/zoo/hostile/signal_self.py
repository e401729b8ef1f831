"""Sends itself SIGTERM in forward."""
import os
import signal

import gradlab
from _layernorm import LayerNorm


class Kills(LayerNorm):
    def forward(self, x):
        os.kill(os.getpid(), signal.SIGTERM)
        return super().forward(x)


@gradlab.register("layernorm")
def build(cfg):
    return Kills(cfg.d_model, cfg.eps)
