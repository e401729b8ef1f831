"""Broken: the output (and, consistently, its gradients) carry a stray factor 2."""
import numpy as np

import gradlab


class Linear:
    def __init__(self, d_in, d_out, dtype):
        self.params = {"weight": np.zeros((d_in, d_out), dtype=dtype), "bias": np.zeros(d_out, dtype=dtype)}
        self.grads = {}

    def forward(self, x):
        self.x = x
        return 2 * (x @ self.params["weight"] + self.params["bias"])

    def backward(self, g):
        d_in, d_out = self.params["weight"].shape
        self.grads["weight"] = 2 * self.x.reshape(-1, d_in).T @ g.reshape(-1, d_out)
        self.grads["bias"] = 2 * g.reshape(-1, d_out).sum(0)
        return 2 * g @ self.params["weight"].T


@gradlab.register("linear")
def build(cfg):
    return Linear(cfg.d_model, cfg.d_ff, cfg.dtype)
