"""Broken: backward treats the standard deviation as a constant (keeps the mean term,
drops the variance term)."""
import numpy as np

import gradlab


class LayerNorm:
    def __init__(self, cfg):
        self.params = dict(gamma=np.ones(cfg.d_model, dtype=cfg.dtype), beta=np.zeros(cfg.d_model, dtype=cfg.dtype))
        self.grads = dict(gamma=None, beta=None)
        self.eps = cfg.eps

    def forward(self, x):
        self.mu = x.mean(axis=-1, keepdims=True)
        self.sigma = np.sqrt(x.var(axis=-1, keepdims=True) + self.eps)
        self.xn = (x - self.mu) / self.sigma
        return self.params["gamma"] * self.xn + self.params["beta"]

    def backward(self, grad):
        g2 = grad.reshape(-1, grad.shape[-1])
        self.grads["gamma"] = np.sum(g2 * self.xn.reshape(g2.shape), axis=0)
        self.grads["beta"] = np.sum(g2, axis=0)
        dxn = grad * self.params["gamma"]
        # BUG: the term  - xn * mean(dxn * xn)  is missing
        return (dxn - dxn.mean(axis=-1, keepdims=True)) / self.sigma


@gradlab.register("layernorm")
def build(cfg):
    return LayerNorm(cfg)
