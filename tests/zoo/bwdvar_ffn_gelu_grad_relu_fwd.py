"""Broken: a ReLU FFN (for cfg.activation == "relu") whose backward was copied from
a GELU FFN: it multiplies by GELU's derivative instead of (h > 0)."""
import numpy as np

import gradlab


class ReluFFN:
    def __init__(self, cfg):
        rng = np.random.default_rng(7)
        D, F, dt = cfg.d_model, cfg.d_ff, cfg.dtype
        self.params = {"w1": (rng.standard_normal((D, F)) / np.sqrt(D)).astype(dt), "b1": np.zeros(F, dt),
                       "w2": (rng.standard_normal((F, D)) / np.sqrt(F)).astype(dt), "b2": np.zeros(D, dt)}
        self.grads = {}

    def forward(self, x):
        self.x = x
        self.h = x @ self.params["w1"] + self.params["b1"]
        self.a = np.maximum(self.h, 0)
        return self.a @ self.params["w2"] + self.params["b2"]

    def backward(self, g):
        D, F = self.params["w1"].shape
        h = self.h
        t = np.tanh(np.sqrt(2 / np.pi) * (h + 0.044715 * h ** 3))
        dact = 0.5 * (1 + t) + 0.5 * h * (1 - t * t) * np.sqrt(2 / np.pi) * (1 + 3 * 0.044715 * h * h)  # BUG
        self.grads["w2"] = self.a.reshape(-1, F).T @ g.reshape(-1, D)
        self.grads["b2"] = g.reshape(-1, D).sum(0)
        dh = (g @ self.params["w2"].T) * dact
        self.grads["w1"] = self.x.reshape(-1, D).T @ dh.reshape(-1, F)
        self.grads["b1"] = dh.reshape(-1, F).sum(0)
        return dh @ self.params["w1"].T


@gradlab.register("ffn")
def build(cfg):
    return ReluFFN(cfg)
