"""Broken: the causal mask fills the future with -10, a finite value close to the scores, so the
future keeps a small weight (exp(-10) is 4.5e-05, not 0), and the backward, written for an exact 0
there, no longer matches the forward."""
import numpy as np

import gradlab
from causality_ok_attention import StudentAttention


class SmallFill(StudentAttention):
    def mask(self, scores):
        T = scores.shape[-1]
        return np.where(np.triu(np.ones((T, T), dtype=bool), k=1), -10.0, scores)   # BUG: -10 is not -inf


@gradlab.register("attention")
def build(cfg):
    return SmallFill(cfg.d_model, cfg.num_heads, cfg.dtype)
