"""Post-LN encoder layer from separate parts, with a param_map function."""
import gradlab
from art_parts import Encoder, load_encoder


@gradlab.register("encoder_layer", param_map=load_encoder)
def build(cfg):
    return Encoder(cfg)
