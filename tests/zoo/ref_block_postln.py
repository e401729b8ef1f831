"""Broken: a Post-LN block (LayerNorm after each residual), the contract says Pre-LN."""
import gradlab
from ref_parts import Block


@gradlab.register("block")
def build(cfg):
    return Block(cfg, post_ln=True)
