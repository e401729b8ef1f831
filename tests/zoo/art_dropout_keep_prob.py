"""p used as the keep probability: rng.random < p keeps."""
import numpy as np

import gradlab


class Dropout:
    def __init__(self, p, seed):
        self.p, self.rng = p, np.random.default_rng(seed)

    def forward(self, x, training=False):
        if not training:
            self.mask = np.ones_like(x)
            return x.copy()
        self.mask = (self.rng.random(x.shape) < self.p) / (1 - self.p)
        return x * self.mask

    def backward(self, g):
        return g * self.mask


@gradlab.register("dropout")
def build(cfg):
    return Dropout(cfg.dropout, cfg.seed)
