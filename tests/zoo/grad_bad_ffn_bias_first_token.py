"""Broken: b2's gradient comes from the first token only (g[0, 0] instead of
the sum over every batch and position)."""
import numpy as np

import gradlab


class FFN:
    def __init__(self, d, f, dtype="float64"):
        rng = np.random.default_rng(0)
        self.params = {"w1": (rng.standard_normal((d, f)) / np.sqrt(d)).astype(dtype), "b1": np.zeros(f, dtype=dtype),
                       "w2": (rng.standard_normal((f, d)) / np.sqrt(f)).astype(dtype), "b2": np.zeros(d, dtype=dtype)}
        self.grads = {}

    def forward(self, x):
        p = self.params
        self.x = x
        self.h = x @ p["w1"] + p["b1"]
        self.a = np.maximum(self.h, 0)
        return self.a @ p["w2"] + p["b2"]

    def backward(self, g):
        p = self.params
        d, f = p["w1"].shape
        self.grads["w2"] = self.a.reshape(-1, f).T @ g.reshape(-1, d)
        self.grads["b2"] = g[0, 0].copy()
        dh = (g @ p["w2"].T) * (self.h > 0)
        self.grads["w1"] = self.x.reshape(-1, d).T @ dh.reshape(-1, f)
        self.grads["b1"] = dh.reshape(-1, f).sum(axis=0)
        return dh @ p["w1"].T


@gradlab.register("ffn")
def build(cfg):
    return FFN(cfg.d_model, cfg.d_ff, cfg.dtype)
