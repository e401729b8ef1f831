"""Broken: forward computes GELU (tanh approximation), backward multiplies by the
ReLU derivative (h > 0), copied from a ReLU FFN."""
import numpy as np

import gradlab

C = np.sqrt(2.0 / np.pi)


class MLP:
    def __init__(self, d_model, d_ff, dtype):
        rng = np.random.default_rng(3)
        self.w1 = (rng.standard_normal((d_model, d_ff)) * np.sqrt(2.0 / d_model)).astype(dtype)
        self.b1 = np.zeros(d_ff, dtype)
        self.w2 = (rng.standard_normal((d_ff, d_model)) * np.sqrt(2.0 / d_ff)).astype(dtype)
        self.b2 = np.zeros(d_model, dtype)

    def forward(self, x):
        self.x = x
        self.h = x @ self.w1 + self.b1
        self.a = 0.5 * self.h * (1 + np.tanh(C * (self.h + 0.044715 * self.h ** 3)))
        return self.a @ self.w2 + self.b2

    def backward(self, dout):
        D, F = self.w1.shape
        dgelu = (self.h > 0).astype(self.h.dtype)   # BUG: the ReLU derivative
        self.dw2 = self.a.reshape(-1, F).T @ dout.reshape(-1, D)
        self.db2 = dout.reshape(-1, D).sum(0)
        dh = (dout @ self.w2.T) * dgelu
        self.dw1 = self.x.reshape(-1, D).T @ dh.reshape(-1, F)
        self.db1 = dh.reshape(-1, F).sum(0)
        return dh @ self.w1.T


@gradlab.register("ffn")
def build(cfg):
    return MLP(cfg.d_model, cfg.d_ff, cfg.dtype)
