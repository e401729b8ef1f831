"""Backward zeroes dmemory at the padded keys with dm[mask] = 0, "to be sure": with key_padding_mask=None
(no padding, as a seq2seq's decoder calls it) dm[None] = 0 zeroes all of dmemory."""
import gradlab
from art_parts import CrossAttention, load_cross


class ZeroesPadding(CrossAttention):
    def forward(self, x, memory, key_padding_mask=None):
        self.pad = key_padding_mask
        return super().forward(x, memory, key_padding_mask)

    def backward(self, g):
        dx, dm = super().backward(g)
        dm[self.pad] = 0                                                   # BUG: with pad None, every row
        return dx, dm


@gradlab.register("cross_attention", param_map=load_cross)
def build(cfg):
    return ZeroesPadding(cfg)
