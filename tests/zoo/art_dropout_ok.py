"""Dropout with np.random.binomial and a cached mask; training is a positional flag."""
import numpy as np

import gradlab


class Dropout:
    def __init__(self, p):
        self.p = p
        self.mask = None

    def forward(self, x, training=True):
        if not training:
            self.mask = np.ones_like(x)
            return x
        self.mask = np.random.binomial(1, 1 - self.p, size=x.shape).astype(x.dtype) / (1 - self.p)
        return x * self.mask

    def backward(self, grad_out):
        return grad_out * self.mask


@gradlab.register("dropout")
def build(cfg):
    return Dropout(cfg.dropout)
