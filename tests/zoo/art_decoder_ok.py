"""Post-LN decoder layer from separate parts (attribute pairs, separate Q/K/V)."""
import gradlab
from art_parts import Decoder, load_decoder


@gradlab.register("decoder_layer", param_map=load_decoder)
def build(cfg):
    return Decoder(cfg)
