"""Correct: the CS231n-style post-LN encoder layer of bwdvar_encoder_parts.py (params and grads as
aligned lists with a names list, module-level forward/backward functions, einsum attention)."""
import gradlab
from bwdvar_encoder_parts import Encoder


@gradlab.register("encoder_layer")
def build(cfg):
    return Encoder(cfg)
