"""Broken: weight decay folded into backward (grad += wd * weight). The
gradient of sum(out * g) does not have it: with g = 0 the weight still gets a
gradient."""
import numpy as np

import gradlab


class Linear:
    def __init__(self, d_in, d_out, dtype="float64"):
        rng = np.random.default_rng(0)
        self.params = {"weight": (rng.standard_normal((d_in, d_out)) / np.sqrt(d_in)).astype(dtype),
                       "bias": np.zeros(d_out, dtype=dtype)}
        self.grads = {}
        self.weight_decay = 1e-2

    def forward(self, x):
        self.x = x
        return x @ self.params["weight"] + self.params["bias"]

    def backward(self, g):
        W = self.params["weight"]
        d_in, d_out = W.shape
        self.grads["weight"] = self.x.reshape(-1, d_in).T @ g.reshape(-1, d_out) + self.weight_decay * W
        self.grads["bias"] = g.reshape(-1, d_out).sum(axis=0)
        return g @ W.T


@gradlab.register("linear")
def build(cfg):
    return Linear(cfg.d_model, cfg.d_ff, cfg.dtype)
