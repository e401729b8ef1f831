"""The decoder's habit in the encoder: a causal mask."""
import gradlab
from art_parts import Encoder, load_encoder


@gradlab.register("encoder_layer", param_map=load_encoder)
def build(cfg):
    return Encoder(cfg, causal=True)
