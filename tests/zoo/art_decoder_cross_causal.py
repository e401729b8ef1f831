"""The causal mask is applied in the cross-attention too: query t sees only memory[:t+1]."""
import gradlab
from art_parts import Decoder, load_decoder


class CausalCross(Decoder):
    def __init__(self, cfg):
        super().__init__(cfg)
        self.cross_attn.causal = True


@gradlab.register("decoder_layer", param_map=load_decoder)
def build(cfg):
    return CausalCross(cfg)
