"""Broken: dropout on the attention weights left on, drawn from np.random without a seed."""
import numpy as np

import gradlab
from causality_ok_attention import StudentAttention


class Dropout(StudentAttention):
    def weights(self, scores):
        A = self.softmax(self.mask(scores))
        keep = np.random.rand(*A.shape) > 0.1
        return A * keep / 0.9


@gradlab.register("attention")
def build(cfg):
    return Dropout(cfg.d_model, cfg.num_heads, cfg.dtype)
