"""Broken: backward scales the caller's grad_out in place (g *= gamma)."""
import numpy as np

import gradlab


class Norm:
    def __init__(self, d, eps, dtype):
        self.eps = eps
        self.params = {"gamma": np.ones(d, dtype=dtype), "beta": np.zeros(d, dtype=dtype)}
        self.grads = {}

    def forward(self, x):
        mu = x.mean(-1, keepdims=True)
        self.rstd = 1.0 / np.sqrt(x.var(-1, keepdims=True) + self.eps)
        self.xn = (x - mu) * self.rstd
        return self.xn * self.params["gamma"] + self.params["beta"]

    def backward(self, g):
        d = g.shape[-1]
        self.grads["gamma"] = (g * self.xn).reshape(-1, d).sum(0)
        self.grads["beta"] = g.reshape(-1, d).sum(0)
        g *= self.params["gamma"]
        return self.rstd * (g - g.mean(-1, keepdims=True) - self.xn * (g * self.xn).mean(-1, keepdims=True))


@gradlab.register("layernorm")
def build(cfg):
    return Norm(cfg.d_model, cfg.eps, cfg.dtype)
