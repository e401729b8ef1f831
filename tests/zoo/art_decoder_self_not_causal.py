"""The decoder's self-attention has no causal mask: position t sees the future of x."""
import gradlab
from art_parts import Decoder, load_decoder


class Leaky(Decoder):
    def __init__(self, cfg):
        super().__init__(cfg)
        self.self_attn.causal = False


@gradlab.register("decoder_layer", param_map=load_decoder)
def build(cfg):
    return Leaky(cfg)
