"""Broken at every size, and still caught where float32 rounds worst (D = 2, two close features):
LayerNorm's input gradient leaves out the `- xhat * mean(dxhat * xhat)` term (the part of dxhat along
xhat that normalising by the variance takes out). Registered as a layernorm and inside a block."""
import numpy as np

import gradlab
from gradlab.modules.block import TransformerBlock
from gradlab.modules.layernorm import LayerNorm


class LayerNormMissingTerm(LayerNorm):
    def backward(self, grad_out):
        D = grad_out.shape[-1]
        self.grads["gamma"] = (grad_out * self.xhat).reshape(-1, D).sum(axis=0)
        self.grads["beta"] = grad_out.reshape(-1, D).sum(axis=0)
        dxhat = grad_out * self.params["gamma"]
        return self.inv_std * (dxhat - dxhat.mean(axis=-1, keepdims=True))     # missing: - xhat * mean(dxhat * xhat)


@gradlab.register("layernorm")
def build_layernorm(cfg):
    return LayerNormMissingTerm(cfg.d_model, eps=cfg.eps, dtype=cfg.dtype, seed=cfg.seed)


@gradlab.register("block")
def build_block(cfg):
    block = TransformerBlock(cfg.d_model, cfg.num_heads, cfg.d_ff, eps=cfg.eps, dtype=cfg.dtype, seed=cfg.seed)
    block.ln1 = LayerNormMissingTerm(cfg.d_model, eps=cfg.eps, dtype=cfg.dtype, seed=cfg.seed)
    return block
