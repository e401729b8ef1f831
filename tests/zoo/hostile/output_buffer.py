"""Correct: a LayerNorm that writes its output into a buffer of its own and returns it (the out= style), so
each call overwrites the array the call before returned."""
import numpy as np

import gradlab
from _layernorm import LayerNorm


class OutBuffer(LayerNorm):
    buf = None

    def forward(self, x):
        y = super().forward(x)
        if self.buf is None or self.buf.shape != y.shape or self.buf.dtype != y.dtype:
            self.buf = np.empty_like(y)
        np.copyto(self.buf, y)
        return self.buf


@gradlab.register("layernorm")
def build(cfg):
    return OutBuffer(cfg.d_model, cfg.eps)
