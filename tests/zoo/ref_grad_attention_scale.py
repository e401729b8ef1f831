"""Broken backward: the forward scales the scores by 1/sqrt(d_k), the backward forgets it."""
import math

import gradlab
from ref_parts import Attention


class ForgetsScale(Attention):
    def backward(self, g):
        scale = self.scale
        self.scale = 1.0           # backward reads self.scale: as if it were never applied
        try:
            return super().backward(g)
        finally:
            self.scale = scale


@gradlab.register("attention")
def build(cfg):
    return ForgetsScale(cfg.d_model, cfg.num_heads, cfg.dtype)
