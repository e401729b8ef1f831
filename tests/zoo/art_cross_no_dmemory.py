"""backward returns dx only, as a self-attention's would: the encoder never learns."""
import gradlab
from art_parts import CrossAttention, load_cross


class OnlyDx(CrossAttention):
    def backward(self, g):
        dx, dmemory = super().backward(g)
        return dx


@gradlab.register("cross_attention", param_map=load_cross)
def build(cfg):
    return OnlyDx(cfg)
