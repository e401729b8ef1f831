"""Broken: an evaluation forward returns x but keeps the last training mask, which backward then applies."""
import numpy as np

import gradlab


class Dropout:
    def __init__(self, p, seed):
        self.p, self.rng, self.mask = p, np.random.default_rng(seed), None

    def forward(self, x, training=False):
        if training:
            self.mask = (self.rng.random(x.shape) >= self.p) / (1 - self.p)
            return x * self.mask
        return x                                                       # BUG: self.mask left from training

    def backward(self, g):
        return g if self.mask is None else g * self.mask


@gradlab.register("dropout")
def build(cfg):
    return Dropout(cfg.dropout, cfg.seed)
