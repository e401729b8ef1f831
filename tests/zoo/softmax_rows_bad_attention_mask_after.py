"""Broken: the mask is applied after the softmax (weights * tril), so rows no longer sum to 1."""
import numpy as np

import gradlab
from causality_ok_attention import StudentAttention


class MaskAfter(StudentAttention):
    def weights(self, scores):
        T = scores.shape[-1]
        return self.softmax(scores) * np.tril(np.ones((T, T)))


@gradlab.register("attention")
def build(cfg):
    return MaskAfter(cfg.d_model, cfg.num_heads, cfg.dtype)
