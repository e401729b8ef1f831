"""Correct maths, split Q/K/V, but no param_map: gradlab cannot copy the fused reference weights."""
import gradlab
from ref_attention_split import SplitAttention


@gradlab.register("attention")
def build(cfg):
    return SplitAttention(cfg.d_model, cfg.num_heads, cfg.dtype)
