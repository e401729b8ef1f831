"""Broken: the parts' Pre-LN block, its LayerNorm backward forgetting gamma (dxhat = dy)."""
import gradlab
from bwdvar_block_parts import Block, LayerNorm


class NoGammaLayerNorm(LayerNorm):
    def backward(self, dy):
        D = dy.shape[-1]
        self.grads["gamma"] = (dy * self.xhat).reshape(-1, D).sum(0)
        self.grads["beta"] = dy.reshape(-1, D).sum(0)
        d = dy                                                      # BUG: dy * gamma
        return self.rstd * (d - d.mean(-1, keepdims=True) - self.xhat * (d * self.xhat).mean(-1, keepdims=True))


@gradlab.register("block")
def build(cfg):
    block = Block(cfg)
    block.ln1.__class__ = block.ln2.__class__ = NoGammaLayerNorm
    return block
