"""Broken for the contract: a parallel block (GPT-J's), x + attn(ln1(x)) + ffn(ln2(x)), with a consistent
backward: the contract's Pre-LN block feeds the FFN branch ln2(h), h = x + attn(ln1(x))."""
import numpy as np

import gradlab
from red_mod_parts import Block


class ParallelBlock(Block):
    def forward(self, x):
        return x + self.attn.forward(self.ln1.forward(x)) + self.ffn.forward(self.ln2.forward(x))

    def backward(self, g):
        return g + self.ln1.backward(self.attn.backward(g)) + self.ln2.backward(self.ffn.backward(g))


@gradlab.register("block")
def build(cfg):
    return ParallelBlock(cfg, np.random.default_rng(cfg.seed))
