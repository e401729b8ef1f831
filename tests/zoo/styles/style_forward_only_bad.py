"""Broken twin: the causal mask is off by one (it keeps j <= i + 1)."""
import numpy as np

import gradlab
from style_forward_only import CausalSelfAttention


class MaskOffByOne(CausalSelfAttention):
    def mask(self, T):
        return np.tril(np.ones((T, T), dtype=bool), k=1)       # BUG: k=0


@gradlab.register("attention")
def build(cfg):
    return MaskOffByOne(cfg.d_model, cfg.num_heads, cfg.dtype, cfg.seed)
