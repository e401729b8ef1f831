"""Broken: forward normalises one sequence at a time and keeps each pass's cache in the same attribute, so
backward, looping over the sequences too, uses the last sequence's cache for every one."""
import numpy as np

import gradlab


def _forward(x, gamma, beta, eps):                      # x: (T, D), one sequence
    mu = x.mean(axis=-1, keepdims=True)
    rstd = 1.0 / np.sqrt(x.var(axis=-1, keepdims=True) + eps)
    xhat = (x - mu) * rstd
    return gamma * xhat + beta, (xhat, rstd, gamma)


def _backward(dout, cache):
    xhat, rstd, gamma = cache
    dxhat = dout * gamma
    dx = rstd * (dxhat - dxhat.mean(-1, keepdims=True) - xhat * (dxhat * xhat).mean(-1, keepdims=True))
    return dx, (dout * xhat).sum(axis=0), dout.sum(axis=0)


class LayerNorm:
    def __init__(self, d, eps, dtype):
        self.params = {"gamma": np.ones(d, dtype), "beta": np.zeros(d, dtype)}
        self.grads = {}
        self.eps = eps

    def forward(self, x):
        out = np.empty_like(x)
        for b in range(x.shape[0]):
            out[b], self.cache = _forward(x[b], self.params["gamma"], self.params["beta"], self.eps)   # BUG
        return out

    def backward(self, dout):
        dx = np.empty_like(dout)
        self.grads["gamma"] = np.zeros_like(self.params["gamma"])
        self.grads["beta"] = np.zeros_like(self.params["beta"])
        for b in range(dout.shape[0]):
            dx[b], dg, db = _backward(dout[b], self.cache)
            self.grads["gamma"] += dg
            self.grads["beta"] += db
        return dx


@gradlab.register("layernorm")
def build(cfg):
    return LayerNorm(cfg.d_model, cfg.eps, cfg.dtype)
