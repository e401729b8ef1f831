"""Prints without end in forward."""
import gradlab
from _layernorm import LayerNorm


class Prints(LayerNorm):
    def forward(self, x):
        line = "debug " * 100
        while True:
            print(line)


@gradlab.register("layernorm")
def build(cfg):
    return Prints(cfg.d_model, cfg.eps)
