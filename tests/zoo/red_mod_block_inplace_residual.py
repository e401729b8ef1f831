"""Broken: the residual is added in place (x += ...), which overwrites the caller's input array (and the attention's cached self.x, the same object)."""
import numpy as np

import gradlab
from red_mod_parts import Block


class InPlaceResidualBlock(Block):
    def forward(self, x):
        x += self.attn.forward(self.ln1.forward(x))      # BUG: in place, x is the caller's array
        return x + self.ffn.forward(self.ln2.forward(x))


@gradlab.register("block")
def build(cfg):
    return InPlaceResidualBlock(cfg, np.random.default_rng(cfg.seed))
