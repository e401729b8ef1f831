"""Correct, but ends its process at the third backward of each process: every
check that needs more backwards than that errors, and each gets a fresh worker."""
import os

import gradlab
from _layernorm import LayerNorm

calls = [0]


class ExitsLater(LayerNorm):
    def backward(self, g):
        calls[0] += 1
        if calls[0] == 3:
            os._exit(0)
        return super().backward(g)


@gradlab.register("layernorm")
def build(cfg):
    return ExitsLater(cfg.d_model, cfg.eps)
