"""Broken: the parts' Pre-LN block, its attention backward without the - sum(dA * A) term of the
softmax Jacobian (ds = A * dA)."""
import gradlab
from bwdvar_block_parts import Block, SelfAttention


class NoJacobianAttention(SelfAttention):
    def dscores(self, A, dA):
        return A * dA                                               # BUG: - (dA * A).sum(-1) missing


@gradlab.register("block")
def build(cfg):
    block = Block(cfg)
    block.attn.__class__ = NoJacobianAttention
    return block
