"""Broken: unbiased variance (ddof=1, like torch.var's default) in forward; the backward
is consistent with it, so gradients match their own forward."""
import numpy as np

import gradlab


class LayerNormUnbiased:
    def __init__(self, d_model, eps=1e-5, dtype="float64"):
        self.weight_shape = d_model
        self.params = {"gamma": np.ones(d_model, dtype), "beta": np.zeros(d_model, dtype)}
        self.grads = {}
        self.eps = eps

    def forward(self, x):
        self.x = x
        self.mean = x.mean(-1, keepdims=True)
        self.var = x.var(-1, ddof=1, keepdims=True)    # BUG: LayerNorm uses the biased variance
        self.std = np.sqrt(self.var + self.eps)
        self.xhat = (x - self.mean) / self.std
        return self.params["gamma"] * self.xhat + self.params["beta"]

    def backward(self, g):
        n = g.shape[-1]
        self.grads["gamma"] = np.einsum("btd,btd->d", g, self.xhat)
        self.grads["beta"] = np.einsum("btd->d", g)
        dxhat = g * self.params["gamma"]
        xc = self.x - self.mean
        dvar = np.sum(dxhat * xc, -1, keepdims=True) * -0.5 * self.std ** -3
        dmean = -np.sum(dxhat, -1, keepdims=True) / self.std
        return dxhat / self.std + dvar * 2 * xc / (n - 1) + dmean / n


@gradlab.register("layernorm")
def build(cfg):
    return LayerNormUnbiased(cfg.d_model, cfg.eps, cfg.dtype)
