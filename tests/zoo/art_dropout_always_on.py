"""No training flag honoured: drops on every call, so evaluation is random too."""
import numpy as np

import gradlab


class Dropout:
    def __init__(self, p, seed):
        self.p, self.rng = p, np.random.default_rng(seed)

    def forward(self, x, training=True):
        self.mask = (self.rng.random(x.shape) >= self.p) / (1 - self.p)
        return x * self.mask

    def backward(self, g):
        return g * self.mask


@gradlab.register("dropout")
def build(cfg):
    return Dropout(cfg.dropout, cfg.seed)
