"""Broken at a large mean in float32: the variance as mean(x**2) - mean(x)**2 (cancellation; negative, NaN
under the sqrt); right in float64 and at ordinary inputs."""
import numpy as np

import gradlab


class LayerNorm:
    def __init__(self, d, eps, dtype):
        self.eps = eps
        self.params = {"gamma": np.ones(d, dtype), "beta": np.zeros(d, dtype)}
        self.grads = {}

    def forward(self, x):
        mu = x.mean(-1, keepdims=True)
        var = (x * x).mean(-1, keepdims=True) - mu * mu             # BUG: ((x - mu) ** 2).mean(...)
        self.rstd = 1 / np.sqrt(var + self.eps)
        self.xhat = (x - mu) * self.rstd
        return self.params["gamma"] * self.xhat + self.params["beta"]

    def backward(self, dy):
        D = dy.shape[-1]
        self.grads["gamma"] = (dy * self.xhat).reshape(-1, D).sum(0)
        self.grads["beta"] = dy.reshape(-1, D).sum(0)
        d = dy * self.params["gamma"]
        return self.rstd * (d - d.mean(-1, keepdims=True) - self.xhat * (d * self.xhat).mean(-1, keepdims=True))


@gradlab.register("layernorm")
def build(cfg):
    return LayerNorm(cfg.d_model, cfg.eps, cfg.dtype)
