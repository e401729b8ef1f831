"""Broken: the mask starts one diagonal too far (k=2), so position t sees t+1."""
import numpy as np

import gradlab
from causality_ok_attention import StudentAttention


class OffByOne(StudentAttention):
    def mask(self, scores):
        T = scores.shape[-1]
        future = np.triu(np.ones((T, T), dtype=bool), k=2)
        return np.where(future, -1e9, scores)


@gradlab.register("attention")
def build(cfg):
    return OffByOne(cfg.d_model, cfg.num_heads, cfg.dtype)
