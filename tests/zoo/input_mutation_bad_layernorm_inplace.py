"""Broken: forward centres the caller's array in place (x -= mean)."""
import numpy as np

import gradlab


class InPlaceNorm:
    def __init__(self, d, eps, dtype):
        self.eps = eps
        self.params = {"gamma": np.ones(d, dtype=dtype), "beta": np.zeros(d, dtype=dtype)}
        self.grads = {}

    def forward(self, x):
        x -= x.mean(-1, keepdims=True)
        self.rstd = 1.0 / np.sqrt((x ** 2).mean(-1, keepdims=True) + self.eps)
        self.xn = x * self.rstd
        return self.xn * self.params["gamma"] + self.params["beta"]

    def backward(self, g):
        d = g.shape[-1]
        self.grads["gamma"] = (g * self.xn).reshape(-1, d).sum(0)
        self.grads["beta"] = g.reshape(-1, d).sum(0)
        gx = g * self.params["gamma"]
        return self.rstd * (gx - gx.mean(-1, keepdims=True) - self.xn * (gx * self.xn).mean(-1, keepdims=True))


@gradlab.register("layernorm")
def build(cfg):
    return InPlaceNorm(cfg.d_model, cfg.eps, cfg.dtype)
