"""Pre-LN, as in article 001's blocks; this kind is Post-LN."""
import gradlab
from art_parts import Encoder, load_encoder


@gradlab.register("encoder_layer", param_map=load_encoder)
def build(cfg):
    return Encoder(cfg, pre_ln=True)
