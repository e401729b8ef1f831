"""Broken by a little: the block's first LayerNorm reports its gamma gradient 0.1% too large (a constant
slightly off between forward and backward). At D = 2 in float32 the analytical gradients round to 1e-4 of
their size, measured; 1e-3 is still caught."""
import gradlab
from gradlab.modules.block import TransformerBlock
from gradlab.modules.layernorm import LayerNorm


class LayerNormGammaScaled(LayerNorm):
    def backward(self, grad_out):
        dx = super().backward(grad_out)
        self.grads["gamma"] = self.grads["gamma"] * 1.001
        return dx


@gradlab.register("block")
def build(cfg):
    block = TransformerBlock(cfg.d_model, cfg.num_heads, cfg.d_ff, eps=cfg.eps, dtype=cfg.dtype, seed=cfg.seed)
    block.ln1 = LayerNormGammaScaled(cfg.d_model, eps=cfg.eps, dtype=cfg.dtype, seed=cfg.seed)
    return block
