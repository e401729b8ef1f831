"""Broken: a block whose backward returns only the residual gradient (dL/dx = grad_out):
the branches' parameters learn, but nothing below the block hears about them."""
import gradlab
from ref_parts import Block


class SkipOnlyBlock(Block):
    def backward(self, g):
        super().backward(g)
        return g


@gradlab.register("block")
def build(cfg):
    return SkipOnlyBlock(cfg)
