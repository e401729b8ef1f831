"""A retry loop whose bare except swallows everything, gradlab's timeout and Ctrl-C included, and which ignores SIGALRM."""
import signal
import time

import gradlab
from _layernorm import LayerNorm

signal.signal(signal.SIGALRM, signal.SIG_IGN)


class Retries(LayerNorm):
    def forward(self, x):
        while True:
            try:
                time.sleep(0.01)
                raise ValueError("not yet")
            except:  # noqa: E722
                pass


@gradlab.register("layernorm")
def build(cfg):
    return Retries(cfg.d_model, cfg.eps)
