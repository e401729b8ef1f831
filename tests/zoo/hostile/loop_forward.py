"""An endless loop in forward."""
import gradlab
from _layernorm import LayerNorm


class Loops(LayerNorm):
    def forward(self, x):
        n = 0
        while True:
            n += 1


@gradlab.register("layernorm")
def build(cfg):
    return Loops(cfg.d_model, cfg.eps)
