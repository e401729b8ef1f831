"""Raises KeyboardInterrupt in forward (gradlab once took it for the user's Ctrl-C and exited 130)."""
import gradlab
from _layernorm import LayerNorm


class Interrupts(LayerNorm):
    def forward(self, x):
        raise KeyboardInterrupt


@gradlab.register("layernorm")
def build(cfg):
    return Interrupts(cfg.d_model, cfg.eps)
