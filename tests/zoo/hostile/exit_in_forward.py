"""sys.exit(0) in forward."""
import sys

import gradlab
from _layernorm import LayerNorm


class Exits(LayerNorm):
    def forward(self, x):
        sys.exit(0)


@gradlab.register("layernorm")
def build(cfg):
    return Exits(cfg.d_model, cfg.eps)
