"""Broken (contract): a ReLU FFN that ignores cfg.activation; the contract's FFN is
GELU (tanh approximation). Gradients are right for its own forward."""
import numpy as np

import gradlab


class FFN:
    def __init__(self, cfg):
        rng = np.random.default_rng(cfg.seed)
        D, F = cfg.d_model, cfg.d_ff
        self.params = {"w1": rng.normal(0, 0.3, (D, F)), "b1": rng.normal(0, 0.1, F),
                       "w2": rng.normal(0, 0.3, (F, D)), "b2": np.zeros(D)}
        self.grads = {}

    def forward(self, x):
        p = self.params
        self.cache = (x, x @ p["w1"] + p["b1"])
        return np.maximum(self.cache[1], 0) @ p["w2"] + p["b2"]

    def backward(self, dy):
        x, h = self.cache
        p, D, F = self.params, x.shape[-1], h.shape[-1]
        a = np.maximum(h, 0)
        self.grads["w2"] = a.reshape(-1, F).T @ dy.reshape(-1, D)
        self.grads["b2"] = dy.reshape(-1, D).sum(0)
        dh = (dy @ p["w2"].T) * (h > 0)
        self.grads["w1"] = x.reshape(-1, D).T @ dh.reshape(-1, F)
        self.grads["b1"] = dh.reshape(-1, F).sum(0)
        return dh @ p["w1"].T


@gradlab.register("ffn")
def build(cfg):
    return FFN(cfg)
