"""Broken for shorter inputs: the causal mask is built once, in __init__, for cfg.seq_len, and never sliced to
the input's T: right at T = seq_len, a broadcast error at any shorter T."""
import numpy as np

import gradlab
from einsum_attention_parts import MHA


class FixedMask(MHA):
    def __init__(self, D, H, dtype, seed, T0):
        super().__init__(D, H, dtype, seed)
        self.fixed = np.triu(np.ones((T0, T0), dtype=bool), k=1)

    def mask(self, T):
        return self.fixed                                         # BUG: self.fixed[:T, :T] (built for max_len)


@gradlab.register("attention")
def build(cfg):
    return FixedMask(cfg.d_model, cfg.num_heads, cfg.dtype, cfg.seed, cfg.seq_len)
