"""Broken: build ignores cfg.dropout and fixes p = 0.1 (right only at the default); at gradlab's p = 0 it
still drops a tenth of the entries."""
import numpy as np

import gradlab


class Dropout:
    def __init__(self, seed, p=0.1):
        self.p, self.rng = p, np.random.default_rng(seed)

    def forward(self, x, training=False):
        if not training:
            self.mask = np.ones_like(x)
            return x.copy()
        self.mask = (self.rng.random(x.shape) >= self.p) / (1 - self.p)
        return x * self.mask

    def backward(self, g):
        return g * self.mask


@gradlab.register("dropout")
def build(cfg):
    return Dropout(cfg.seed)
