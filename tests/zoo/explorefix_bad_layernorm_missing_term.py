"""Broken at every size, and still caught where float32 rounds worst (D = 2, two close features):
LayerNorm's input gradient leaves out the `- xhat * mean(dxhat * xhat)` term (the part of dxhat along
xhat that normalising by the variance takes out). Registered as a layernorm and inside a block (the
student parts of bwdvar_block_parts.py)."""
import gradlab
from bwdvar_block_parts import Block, LayerNorm


class LayerNormMissingTerm(LayerNorm):
    def backward(self, dy):
        D = dy.shape[-1]
        self.grads["gamma"] = (dy * self.xhat).reshape(-1, D).sum(0)
        self.grads["beta"] = dy.reshape(-1, D).sum(0)
        d = dy * self.params["gamma"]
        return self.rstd * (d - d.mean(-1, keepdims=True))          # missing: - xhat * mean(d * xhat)


@gradlab.register("layernorm")
def build_layernorm(cfg):
    return LayerNormMissingTerm(cfg.d_model, cfg.eps, cfg.dtype)


@gradlab.register("block")
def build_block(cfg):
    block = Block(cfg)
    block.ln1 = LayerNormMissingTerm(cfg.d_model, cfg.eps, cfg.dtype)
    return block
