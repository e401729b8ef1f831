"""Broken in float16 only: the backward of the seed articles' chain rule through
the variance, with (var + eps) ** -1.5. Right in float64 and float32; in float16
small inputs give a variance of ~1e-6 (below float16's smallest normal number)
and (var + eps) ** -1.5 ~ 2.7e7 overflows float16's 65504: inf and NaN."""
import numpy as np

import gradlab


class LayerNorm:
    def __init__(self, d, eps, dtype="float64"):
        self.eps = eps
        self.gamma = np.ones(d, dtype=dtype)
        self.beta = np.zeros(d, dtype=dtype)

    def forward(self, x):
        self.x = x
        self.mu = x.mean(-1, keepdims=True)
        self.var = ((x - self.mu) ** 2).mean(-1, keepdims=True)
        self.xhat = (x - self.mu) / np.sqrt(self.var + self.eps)
        return self.gamma * self.xhat + self.beta

    def backward(self, g):
        N = g.shape[-1]
        D = g.shape[-1]
        self.dgamma = (g * self.xhat).reshape(-1, D).sum(0)
        self.dbeta = g.reshape(-1, D).sum(0)
        dxhat = g * self.gamma
        xc = self.x - self.mu
        dvar = (dxhat * xc).sum(-1, keepdims=True) * -0.5 * (self.var + self.eps) ** -1.5
        dmu = -(dxhat / np.sqrt(self.var + self.eps)).sum(-1, keepdims=True) - 2 * dvar * xc.mean(-1, keepdims=True)
        return dxhat / np.sqrt(self.var + self.eps) + dvar * 2 * xc / N + dmu / N


@gradlab.register("layernorm")
def build(cfg):
    return LayerNorm(cfg.d_model, cfg.eps, cfg.dtype)
