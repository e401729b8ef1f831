"""Broken: softmax over the query axis (axis=-2) instead of the keys."""
import gradlab
from ref_parts import Attention


@gradlab.register("attention")
def build(cfg):
    return Attention(cfg.d_model, cfg.num_heads, cfg.dtype, axis=-2)
