"""The mask is read as True = keep: the real tokens are the ones masked out."""
import gradlab
from art_parts import CrossAttention, load_cross


class Inverted(CrossAttention):
    def forward(self, x, memory, key_padding_mask=None):
        return super().forward(x, memory, None if key_padding_mask is None else ~key_padding_mask)


@gradlab.register("cross_attention", param_map=load_cross)
def build(cfg):
    return Inverted(cfg)
