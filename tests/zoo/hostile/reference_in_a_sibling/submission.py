"""Registers the LayerNorm of its helper file, which holds gradlab's reference helpers."""
import gradlab
from mylib import MyLayerNorm


@gradlab.register("layernorm")
def build(cfg):
    return MyLayerNorm(cfg)
