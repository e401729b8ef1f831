"""Broken: forward adds the positions into the caller's array (x += ...) and returns it."""
import numpy as np

import gradlab


class Positional:
    def __init__(self, max_len, d, dtype):
        self.weight = (np.random.default_rng(7).standard_normal((max_len, d)) * 0.1).astype(dtype)

    def forward(self, x):
        self.T = x.shape[1]
        x += self.weight[:self.T]
        return x

    def backward(self, g):
        self.dweight = np.zeros_like(self.weight)
        self.dweight[:self.T] = g.sum(0)
        return g


@gradlab.register("positional")
def build(cfg):
    return Positional(cfg.max_len, cfg.d_model, cfg.dtype)
