"""The mask kept by forward already holds 1/(1-p); backward divides by (1 - p) again."""
import numpy as np

import gradlab


class Dropout:
    def __init__(self, p, seed):
        self.p, self.rng = p, np.random.default_rng(seed)
        self.params, self.grads = {}, {}

    def forward(self, x, training=False):
        if not training:
            self.mask = None
            return x.copy()
        self.mask = (self.rng.random(x.shape) >= self.p) / (1 - self.p)
        return x * self.mask

    def backward(self, g):
        return g.copy() if self.mask is None else g * self.mask / (1 - self.p)


@gradlab.register("dropout")
def build(cfg):
    return Dropout(cfg.dropout, cfg.seed)
