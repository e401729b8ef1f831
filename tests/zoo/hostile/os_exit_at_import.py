"""Ends the process while being imported (no exception to catch)."""
import os

import gradlab
from _layernorm import LayerNorm

os._exit(0)


@gradlab.register("layernorm")
def build(cfg):
    return LayerNorm(cfg.d_model, cfg.eps)
