"""Writes 3 MB to stderr in one call at import (one write past the limit is cut short without an error;
only a second one would fail)."""
import sys

import gradlab
from _layernorm import LayerNorm

sys.stderr.write("x" * (3 << 20))


@gradlab.register("layernorm")
def build(cfg):
    return LayerNorm(cfg.d_model, cfg.eps)
