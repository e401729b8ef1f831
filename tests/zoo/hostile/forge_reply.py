"""Writes garbage into gradlab's reply pipe (its fd is on the worker's command line) in forward."""
import os
import sys

import gradlab
from _layernorm import LayerNorm


class Forges(LayerNorm):
    def forward(self, x):
        os.write(int(sys.argv[2]), b"\xff" * 64)
        return super().forward(x)


@gradlab.register("layernorm")
def build(cfg):
    return Forges(cfg.d_model, cfg.eps)
