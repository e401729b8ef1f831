"""Broken: softmax over the query axis (-2) instead of the keys (-1)."""
import numpy as np

import gradlab
from causality_ok_attention import StudentAttention


class WrongAxis(StudentAttention):
    def softmax(self, s):
        e = np.exp(s - s.max(axis=-2, keepdims=True))
        return e / e.sum(axis=-2, keepdims=True)


@gradlab.register("attention")
def build(cfg):
    return WrongAxis(cfg.d_model, cfg.num_heads, cfg.dtype)
