"""Broken: backward adds into the gradients (+=), PyTorch-style, but nothing
ever zeroes them: a second backward doubles them."""
import numpy as np

import gradlab


class Linear:
    def __init__(self, d_in, d_out, dtype="float64"):
        rng = np.random.default_rng(0)
        self.params = {"weight": (rng.standard_normal((d_in, d_out)) / np.sqrt(d_in)).astype(dtype),
                       "bias": np.zeros(d_out, dtype=dtype)}
        self.grads = {k: np.zeros_like(v) for k, v in self.params.items()}

    def forward(self, x):
        self.x = x
        return x @ self.params["weight"] + self.params["bias"]

    def backward(self, g):
        d_in, d_out = self.params["weight"].shape
        self.grads["weight"] += self.x.reshape(-1, d_in).T @ g.reshape(-1, d_out)
        self.grads["bias"] += g.reshape(-1, d_out).sum(axis=0)
        return g @ self.params["weight"].T


@gradlab.register("linear")
def build(cfg):
    return Linear(cfg.d_model, cfg.d_ff, cfg.dtype)
