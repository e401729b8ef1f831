"""Broken: the attention scores are not scaled by 1/sqrt(d_k) (backward consistent with it)."""
import gradlab
from ref_parts import Attention


@gradlab.register("attention")
def build(cfg):
    return Attention(cfg.d_model, cfg.num_heads, cfg.dtype, scale=1.0)
