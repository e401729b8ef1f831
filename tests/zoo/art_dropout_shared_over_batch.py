"""Broken: one mask of shape x.shape[1:], shared by every sample of the batch (each entry is still dropped
with probability p, but the samples' drops are the same)."""
import numpy as np

import gradlab


class Dropout:
    def __init__(self, p, seed):
        self.p, self.rng = p, np.random.default_rng(seed)

    def forward(self, x, training=False):
        if not training:
            self.mask = np.ones(x.shape[1:], x.dtype)
            return x
        self.mask = (self.rng.random(x.shape[1:]) < 1 - self.p) / (1 - self.p)   # BUG: rng.random(x.shape)
        return x * self.mask

    def backward(self, g):
        return g * self.mask


@gradlab.register("dropout")
def build(cfg):
    return Dropout(cfg.dropout, cfg.seed)
