"""Broken: to save memory, backward reuses the cached GELU derivative as its
output buffer (dh = self.dact; dh *= da). The first backward is right; the
second starts from a cache the first one overwrote."""
import math

import numpy as np

import gradlab

C = math.sqrt(2 / math.pi)


class FFN:
    def __init__(self, d, f, dtype="float64"):
        rng = np.random.default_rng(0)
        self.params = {"w1": (rng.standard_normal((d, f)) / np.sqrt(d)).astype(dtype), "b1": np.zeros(f, dtype=dtype),
                       "w2": (rng.standard_normal((f, d)) / np.sqrt(f)).astype(dtype), "b2": np.zeros(d, dtype=dtype)}
        self.grads = {}

    def forward(self, x):
        p = self.params
        self.x = x
        h = x @ p["w1"] + p["b1"]
        t = np.tanh(C * (h + 0.044715 * h ** 3))
        self.a = 0.5 * h * (1 + t)
        self.dact = 0.5 * (1 + t) + 0.5 * h * (1 - t * t) * C * (1 + 3 * 0.044715 * h * h)
        return self.a @ p["w2"] + p["b2"]

    def backward(self, g):
        p = self.params
        d, f = p["w1"].shape
        self.grads["w2"] = self.a.reshape(-1, f).T @ g.reshape(-1, d)
        self.grads["b2"] = g.reshape(-1, d).sum(axis=0)
        dh = self.dact
        dh *= g @ p["w2"].T                      # in place: the cache is gone after this call
        self.grads["w1"] = self.x.reshape(-1, d).T @ dh.reshape(-1, f)
        self.grads["b1"] = dh.reshape(-1, f).sum(axis=0)
        return dh @ p["w1"].T


@gradlab.register("ffn")
def build(cfg):
    return FFN(cfg.d_model, cfg.d_ff, cfg.dtype)
