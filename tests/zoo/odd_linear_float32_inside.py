"""Correct: a linear that computes in float32 whatever cfg.dtype says; parameters, output and gradients in
cfg.dtype (CONTRACT §6 allows the arithmetic)."""
import numpy as np

import gradlab


class Linear:
    def __init__(self, cfg):
        rng = np.random.default_rng(cfg.seed)
        self.dtype = cfg.dtype
        D = cfg.d_model
        self.params = {"weight": (rng.standard_normal((D, D)) / np.sqrt(D)).astype(cfg.dtype),
                       "bias": np.zeros(D, cfg.dtype)}
        self.grads = {}

    def forward(self, x):
        self.x = x.astype(np.float32)
        w, b = (self.params[k].astype(np.float32) for k in ("weight", "bias"))
        return (self.x @ w + b).astype(self.dtype)

    def backward(self, g):
        g = g.astype(np.float32)
        D = g.shape[-1]
        self.grads["weight"] = (self.x.reshape(-1, D).T @ g.reshape(-1, D)).astype(self.dtype)
        self.grads["bias"] = g.reshape(-1, D).sum(0).astype(self.dtype)
        return (g @ self.params["weight"].astype(np.float32).T).astype(self.dtype)


@gradlab.register("linear")
def build(cfg):
    return Linear(cfg)
