"""Broken: forward scales the scores by 1/d_k instead of 1/sqrt(d_k); backward uses 1/sqrt(d_k)."""
import numpy as np

import gradlab
from red_mod_attention_ok_einsum import CausalAttention


class ScaleDkForward(CausalAttention):
    def scores(self, q, k):
        return np.einsum("bqhd,bkhd->bhqk", q, k) / self.dk  # BUG: 1/sqrt(d_k)


@gradlab.register("attention")
def build(cfg):
    return ScaleDkForward(cfg)
