"""Broken: the mask keeps j <= i + 1, so each position sees one step of the future (masked_fill style)."""
import numpy as np

import gradlab
from red_mod_attention_ok_einsum import CausalAttention


class MaskLeak(CausalAttention):
    def mask(self, scores):
        T = scores.shape[-1]
        future = np.triu(np.ones((T, T), dtype=bool), k=2)   # BUG: k=1 masks j > i
        scores = scores.copy()
        scores[..., future] = -np.inf
        return scores


@gradlab.register("attention")
def build(cfg):
    return MaskLeak(cfg)
