"""Exits while being imported."""
import sys

import gradlab
from _layernorm import LayerNorm

sys.exit(3)


@gradlab.register("layernorm")
def build(cfg):
    return LayerNorm(cfg.d_model, cfg.eps)
