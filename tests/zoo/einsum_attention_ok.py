"""Correct: the attention of einsum_attention_parts.py as it is (the correct twin of the files that plant one
bug in it)."""
import gradlab
from einsum_attention_parts import MHA


@gradlab.register("attention")
def build(cfg):
    return MHA(cfg.d_model, cfg.num_heads, cfg.dtype, cfg.seed)
