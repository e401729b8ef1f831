"""Cross-attention with separate Wq/Wk/Wv/Wo (attribute pairs), -1e9 padding mask,
backward -> (dx, dmemory); a param_map function loads the reference's fused kv_weight."""
import gradlab
from art_parts import CrossAttention, load_cross


@gradlab.register("cross_attention", param_map=load_cross)
def build(cfg):
    return CrossAttention(cfg)
