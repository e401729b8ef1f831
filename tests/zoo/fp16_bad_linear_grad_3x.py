"""Broken: the weight gradient is 3x too large (a factor left over from a
3-way split). In float16, finite differences of the module itself cannot see
it (3 significant digits); the gradient check compares with a float64 copy."""
import numpy as np

import gradlab


class Linear:
    def __init__(self, d_in, d_out, dtype="float64"):
        rng = np.random.default_rng(0)
        self.params = {"weight": (rng.standard_normal((d_in, d_out)) / np.sqrt(d_in)).astype(dtype),
                       "bias": np.zeros(d_out, dtype=dtype)}
        self.grads = {}

    def forward(self, x):
        self.x = x
        return x @ self.params["weight"] + self.params["bias"]

    def backward(self, g):
        x2 = self.x.reshape(-1, self.x.shape[-1])
        g2 = g.reshape(-1, g.shape[-1])
        self.grads["weight"] = 3 * (x2.T @ g2)
        self.grads["bias"] = g2.sum(axis=0)
        return g @ self.params["weight"].T


@gradlab.register("linear")
def build(cfg):
    return Linear(cfg.d_model, cfg.d_ff, cfg.dtype)
