"""Broken: heads are merged with reshape after moving heads first, without transposing back: (B, H, T, d_k).reshape(B, T, D)."""
import numpy as np

import gradlab
from red_mod_attention_ok_einsum import CausalAttention


class MergeReshape(CausalAttention):
    def merge(self, ctx):
        B, T = ctx.shape[:2]
        return np.ascontiguousarray(ctx.transpose(0, 2, 1, 3)).reshape(B, T, -1)   # BUG: heads first, then reshape

    def split(self, dctx):
        B, T = dctx.shape[:2]
        return dctx.reshape(B, self.H, T, self.dk).transpose(0, 2, 1, 3)


@gradlab.register("attention")
def build(cfg):
    return MergeReshape(cfg)
