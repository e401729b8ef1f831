"""Broken by a little: the block's first LayerNorm reports its gamma gradient 0.1% too large (a constant
slightly off between forward and backward). At D = 2 in float32 the analytical gradients round to 1e-4 of
their size, measured; 1e-3 is still caught. The student parts of bwdvar_block_parts.py."""
import gradlab
from bwdvar_block_parts import Block, LayerNorm


class LayerNormGammaScaled(LayerNorm):
    def backward(self, dy):
        dx = super().backward(dy)
        self.grads["gamma"] = self.grads["gamma"] * 1.001
        return dx


@gradlab.register("block")
def build(cfg):
    block = Block(cfg)
    block.ln1 = LayerNormGammaScaled(cfg.d_model, cfg.eps, cfg.dtype)
    return block
