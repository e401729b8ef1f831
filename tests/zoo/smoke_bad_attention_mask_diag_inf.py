"""Broken: the causal mask hides the diagonal too (np.triu with k=0), filled with -inf: the first query has no
key left, and the softmax of a row of -inf is NaN at position 0 of every sample (with -1e9 the same bug
attends uniformly instead: red_mod_attention_mask_diag.py)."""
import numpy as np

import gradlab
from grad_ok_attention import StudentAttention


class MaskDiagonal(StudentAttention):
    def mask(self, scores):
        T = scores.shape[-1]
        hidden = np.triu(np.ones((T, T), dtype=bool), k=0)               # BUG: k=1 keeps j == i
        return np.where(hidden, -np.inf, scores)


@gradlab.register("attention")
def build(cfg):
    return MaskDiagonal(cfg.d_model, cfg.num_heads, cfg.dtype)
