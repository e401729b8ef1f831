"""Broken: the input gradient forgets gamma (dxhat = g instead of g * gamma).
It hides when gamma == 1, gradlab's random gamma shows it."""
import numpy as np

import gradlab


class LayerNorm:
    def __init__(self, d, eps=1e-5, dtype="float64"):
        self.params = {"gamma": np.ones(d, dtype=dtype), "beta": np.zeros(d, dtype=dtype)}
        self.grads = {}
        self.eps = eps

    def forward(self, x):
        mu = x.mean(axis=-1, keepdims=True)
        self.inv = 1 / np.sqrt(x.var(axis=-1, keepdims=True) + self.eps)
        self.xhat = (x - mu) * self.inv
        return self.params["gamma"] * self.xhat + self.params["beta"]

    def backward(self, g):
        D = g.shape[-1]
        self.grads["gamma"] = (g * self.xhat).reshape(-1, D).sum(axis=0)
        self.grads["beta"] = g.reshape(-1, D).sum(axis=0)
        dxhat = g                                         # missing * gamma
        return self.inv * (dxhat - dxhat.mean(axis=-1, keepdims=True)
                           - self.xhat * (dxhat * self.xhat).mean(axis=-1, keepdims=True))


@gradlab.register("layernorm")
def build(cfg):
    return LayerNorm(cfg.d_model, cfg.eps, cfg.dtype)
