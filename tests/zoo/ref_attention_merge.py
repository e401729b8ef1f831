"""Broken: heads merged with a plain reshape (B, H, T, d_k) -> (B, T, D), mixing time steps."""
import gradlab
from ref_parts import Attention


@gradlab.register("attention")
def build(cfg):
    return Attention(cfg.d_model, cfg.num_heads, cfg.dtype, merge="reshape")
