"""Broken: backward never computes the bias gradient; it stays the zeros made in __init__."""
import numpy as np

import gradlab


class Linear:
    def __init__(self, d_in, d_out, dtype="float64"):
        rng = np.random.default_rng(0)
        self.W = (rng.standard_normal((d_in, d_out)) / np.sqrt(d_in)).astype(dtype)
        self.b = np.zeros(d_out, dtype=dtype)
        self.dW, self.db = np.zeros_like(self.W), np.zeros_like(self.b)

    def forward(self, x):
        self.x = x
        return x @ self.W + self.b

    def backward(self, g):
        self.dW = self.x.reshape(-1, self.W.shape[0]).T @ g.reshape(-1, self.W.shape[1])
        return g @ self.W.T                                     # BUG: self.db is never set


@gradlab.register("linear")
def build(cfg):
    return Linear(cfg.d_model, cfg.d_ff, cfg.dtype)
