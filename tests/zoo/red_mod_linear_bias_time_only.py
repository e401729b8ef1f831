"""Broken: the bias gradient is summed over time but not over the batch
(db has one row per sample)."""
import numpy as np

import gradlab


class Linear:
    def __init__(self, n_in, n_out, dtype):
        rng = np.random.default_rng(0)
        self.weight = rng.normal(0, n_in ** -0.5, (n_in, n_out)).astype(dtype)
        self.bias = np.zeros(n_out, dtype)

    def forward(self, x):                # x (B, T, n_in)
        self.x = x
        return np.einsum("bti,io->bto", x, self.weight) + self.bias

    def backward(self, g):               # g (B, T, n_out)
        self.dweight = np.einsum("bti,bto->io", self.x, g)
        self.dbias = g.sum(axis=1)       # BUG: should also sum over axis 0
        return np.einsum("bto,io->bti", g, self.weight)


@gradlab.register("linear")
def build(cfg):
    return Linear(cfg.d_model, cfg.d_ff, cfg.dtype)
