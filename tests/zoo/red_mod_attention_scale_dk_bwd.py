"""Broken: backward scales dscores by 1/d_k instead of 1/sqrt(d_k); forward is right."""
import numpy as np

import gradlab
from red_mod_attention_ok_einsum import CausalAttention


class ScaleDkBackward(CausalAttention):
    def dscores(self, A, dA):
        return A * (dA - (A * dA).sum(axis=-1, keepdims=True)) / self.dk  # BUG: 1/sqrt(d_k)


@gradlab.register("attention")
def build(cfg):
    return ScaleDkBackward(cfg)
