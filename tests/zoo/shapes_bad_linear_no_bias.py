"""Broken for the contract: a linear layer without its bias parameter."""
import numpy as np

import gradlab


class Linear:
    def __init__(self, d_in, d_out, dtype):
        rng = np.random.default_rng(4)
        self.params = {"weight": (rng.standard_normal((d_in, d_out)) / np.sqrt(d_in)).astype(dtype)}
        self.grads = {}

    def forward(self, x):
        self.x = x
        return x @ self.params["weight"]

    def backward(self, g):
        d_in, d_out = self.params["weight"].shape
        self.grads["weight"] = self.x.reshape(-1, d_in).T @ g.reshape(-1, d_out)
        return g @ self.params["weight"].T


@gradlab.register("linear")
def build(cfg):
    return Linear(cfg.d_model, cfg.d_ff, cfg.dtype)
