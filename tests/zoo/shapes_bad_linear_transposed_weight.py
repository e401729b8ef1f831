"""Broken for the contract: the weight is stored (d_out, d_in), PyTorch style,
while param_map says it is the reference's weight, which is (d_in, d_out)."""
import numpy as np

import gradlab


class Linear:
    def __init__(self, d_in, d_out, dtype):
        rng = np.random.default_rng(3)
        self.params = {"W": (rng.standard_normal((d_out, d_in)) / np.sqrt(d_in)).astype(dtype),
                       "b": np.zeros(d_out, dtype=dtype)}
        self.grads = {}

    def forward(self, x):
        self.x = x
        return x @ self.params["W"].T + self.params["b"]

    def backward(self, g):
        d_out, d_in = self.params["W"].shape
        self.grads["W"] = g.reshape(-1, d_out).T @ self.x.reshape(-1, d_in)
        self.grads["b"] = g.reshape(-1, d_out).sum(0)
        return g @ self.params["W"]


@gradlab.register("linear", param_map={"W": "weight", "b": "bias"})
def build(cfg):
    return Linear(cfg.d_model, cfg.d_ff, cfg.dtype)
