"""Drops, but does not scale the survivors (the expectation shrinks by 1 - p)."""
import numpy as np

import gradlab


class Dropout:
    def __init__(self, p, seed):
        self.p, self.rng = p, np.random.default_rng(seed)

    def forward(self, x, training=False):
        self.mask = (self.rng.random(x.shape) >= self.p) if training else np.ones(x.shape, bool)
        return x * self.mask

    def backward(self, g):
        return g * self.mask


@gradlab.register("dropout")
def build(cfg):
    return Dropout(cfg.dropout, cfg.seed)
