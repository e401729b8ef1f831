"""Broken by rounding: the scaled mask kept in float16, 1/(1-p) = 1.4285714 rounded to 1.4287109 (1e-4 off:
the expectation of the output drifts)."""
import numpy as np

import gradlab


class Dropout:
    def __init__(self, p, seed):
        self.p, self.rng, self.mask = p, np.random.default_rng(seed), None

    def forward(self, x, training=True):
        if not training or self.p == 0:
            self.mask = None
            return x
        self.mask = ((self.rng.random(x.shape) >= self.p) / (1 - self.p)).astype(np.float16)   # BUG: float16
        return x * self.mask

    def backward(self, g):
        return g if self.mask is None else g * self.mask


@gradlab.register("dropout")
def build(cfg):
    return Dropout(cfg.dropout, cfg.seed)
