"""Broken: LayerNorm whose backward passes grad_out * gamma straight through,
forgetting that the mean and variance depend on x."""
import gradlab
from ref_parts import LayerNorm


class ShortcutLayerNorm(LayerNorm):
    def backward(self, dy):
        super().backward(dy)
        return dy * self.params["gamma"]


@gradlab.register("layernorm")
def build(cfg):
    return ShortcutLayerNorm(cfg.d_model, cfg.eps, cfg.dtype)
