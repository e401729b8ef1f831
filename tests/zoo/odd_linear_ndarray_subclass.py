"""Correct: parameters and outputs are an ndarray subclass that only adds an
attribute (a home-made "Tensor" with a name), as some teaching code does.
It behaves like an array, so gradlab judges it by its numbers: every check passes."""
import numpy as np

import gradlab


class Tensor(np.ndarray):
    def __new__(cls, values, name=""):
        t = np.asarray(values).view(cls)
        t.name = name
        return t

    def __array_finalize__(self, obj):
        self.name = getattr(obj, "name", "")


class Linear:
    def __init__(self, d_in, d_out, dtype):
        rng = np.random.default_rng(0)
        self.params = {"weight": Tensor((rng.standard_normal((d_in, d_out)) / np.sqrt(d_in)).astype(dtype), "W"),
                       "bias": Tensor(np.zeros(d_out, dtype=dtype), "b")}
        self.grads = {}

    def forward(self, x):
        self.x = Tensor(x, "x")
        return self.x @ self.params["weight"] + self.params["bias"]

    def backward(self, g):
        d_in, d_out = self.params["weight"].shape
        self.grads["weight"] = Tensor(self.x.reshape(-1, d_in).T @ g.reshape(-1, d_out), "dW")
        self.grads["bias"] = Tensor(g.reshape(-1, d_out).sum(axis=0), "db")
        return Tensor(g @ self.params["weight"].T, "dx")


@gradlab.register("linear")
def build(cfg):
    return Linear(cfg.d_model, cfg.d_ff, cfg.dtype)
