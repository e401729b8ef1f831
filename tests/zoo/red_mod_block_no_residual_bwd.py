"""Broken: forward has both residuals, backward drops the skip path of the attention sub-layer."""
import numpy as np

import gradlab
from red_mod_parts import Block


class NoResidualBackwardBlock(Block):
    def backward(self, g):
        g = g + self.ln2.backward(self.ffn.backward(g))
        return self.ln1.backward(self.attn.backward(g))      # BUG: + g (the residual) is missing


@gradlab.register("block")
def build(cfg):
    return NoResidualBackwardBlock(cfg, np.random.default_rng(cfg.seed))
