"""Correct: an additive -1e9 mask instead of -inf (future weights are ~1e-400, i.e. 0)."""
import numpy as np

import gradlab
from grad_ok_attention import StudentAttention


class Mask1e9(StudentAttention):
    def mask(self, scores):
        T = scores.shape[-1]
        return scores + np.triu(np.full((T, T), -1e9), k=1)


@gradlab.register("attention")
def build(cfg):
    return Mask1e9(cfg.d_model, cfg.num_heads, cfg.dtype)
