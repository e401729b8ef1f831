"""PyTorch layout: weight stored (d_out, d_in) and applied as x @ weight.T,
under the reference's name. Its own maths is right, but it does not hold the
reference's (d_in, d_out) layout (CONTRACT §3)."""
import numpy as np

import gradlab


class Linear:
    def __init__(self, d_in, d_out, dtype):
        self.params = {"weight": np.random.default_rng(0).normal(size=(d_out, d_in)).astype(dtype) / np.sqrt(d_in),
                       "bias": np.zeros(d_out, dtype=dtype)}
        self.grads = {}

    def forward(self, x):
        self.x = x
        return x @ self.params["weight"].T + self.params["bias"]

    def backward(self, g):
        d_out, d_in = self.params["weight"].shape
        self.grads["weight"] = g.reshape(-1, d_out).T @ self.x.reshape(-1, d_in)
        self.grads["bias"] = g.reshape(-1, d_out).sum(0)
        return g @ self.params["weight"]


@gradlab.register("linear")
def build(cfg):
    return Linear(cfg.d_model, cfg.d_ff, cfg.dtype)
