"""Broken: the mask keeps j < i (the diagonal is masked too), with a -1e9 fill; row 0 then attends uniformly to every position."""
import numpy as np

import gradlab
from red_mod_attention_ok_einsum import CausalAttention


class MaskDiagonal(CausalAttention):
    def mask(self, scores):
        T = scores.shape[-1]
        keep = np.tril(np.ones((T, T)), k=-1)   # BUG: should be k=0 (j <= i)
        return scores * keep + (1 - keep) * -1e9


@gradlab.register("attention")
def build(cfg):
    return MaskDiagonal(cfg)
