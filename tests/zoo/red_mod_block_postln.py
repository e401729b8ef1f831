"""Broken: Post-LN (the original Transformer): x = ln1(x + attn(x)), then ln2(x + ffn(x)); backward consistent."""
import numpy as np

import gradlab
from red_mod_parts import Block


class PostLNBlock(Block):
    def forward(self, x):
        h = self.ln1.forward(x + self.attn.forward(x))
        return self.ln2.forward(h + self.ffn.forward(h))

    def backward(self, g):
        g = self.ln2.backward(g)
        g = g + self.ffn.backward(g)
        g = self.ln1.backward(g)
        return g + self.attn.backward(g)


@gradlab.register("block")
def build(cfg):
    return PostLNBlock(cfg, np.random.default_rng(cfg.seed))
