"""Correct, but changes the working folder at import (relative --json paths once went elsewhere)."""
import os

import gradlab
from _layernorm import LayerNorm

os.chdir("/")


@gradlab.register("layernorm")
def build(cfg):
    return LayerNorm(cfg.d_model, cfg.eps)
