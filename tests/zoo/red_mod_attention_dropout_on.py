"""Broken: attention dropout (p=0.1) left on: forward(x, training=True) by default; backward uses the same mask."""
import numpy as np

import gradlab
from red_mod_attention_ok_einsum import CausalAttention


class DropoutOn(CausalAttention):
    def mix(self, A, v):
        self.drop = (np.random.rand(*A.shape) > 0.1) / 0.9   # BUG: dropout on during checks
        return np.einsum("bhqk,bkhd->bqhd", A * self.drop, v)

    def dscores(self, A, dA):
        return A * (dA * self.drop - (A * dA * self.drop).sum(axis=-1, keepdims=True)) / np.sqrt(self.dk)


@gradlab.register("attention")
def build(cfg):
    return DropoutOn(cfg)
