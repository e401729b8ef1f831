"""Broken: backward returns the gradient at the hidden layer (B, T, d_ff)
instead of dL/dx (B, T, D); forward also returns the hidden layer's width."""
import numpy as np

import gradlab


class FFN:
    def __init__(self, d, f, dtype):
        rng = np.random.default_rng(5)
        self.w1 = (rng.standard_normal((d, f)) / np.sqrt(d)).astype(dtype)
        self.b1 = np.zeros(f, dtype=dtype)
        self.w2 = (rng.standard_normal((f, d)) / np.sqrt(f)).astype(dtype)
        self.b2 = np.zeros(d, dtype=dtype)

    def forward(self, x):
        self.x = x
        self.h = x @ self.w1 + self.b1
        self.a = np.maximum(self.h, 0)
        return self.a @ self.w2 + self.b2

    def backward(self, g):
        d, f = self.w1.shape
        self.dw2 = self.a.reshape(-1, f).T @ g.reshape(-1, d)
        self.db2 = g.reshape(-1, d).sum(0)
        dh = (g @ self.w2.T) * (self.h > 0)
        self.dw1 = self.x.reshape(-1, d).T @ dh.reshape(-1, f)
        self.db1 = dh.reshape(-1, f).sum(0)
        return dh                      # forgot the last step: dh @ self.w1.T


@gradlab.register("ffn")
def build(cfg):
    return FFN(cfg.d_model, cfg.d_ff, cfg.dtype)
