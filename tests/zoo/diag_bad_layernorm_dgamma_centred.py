"""Broken: LayerNorm whose gamma gradient sums grad_out * (x - mean), the centred input, instead of
grad_out * xhat, the normalised one forward multiplies gamma by."""
import numpy as np

import gradlab


class LayerNorm:
    def __init__(self, cfg):
        self.params = {"gamma": np.ones(cfg.d_model, cfg.dtype), "beta": np.zeros(cfg.d_model, cfg.dtype)}
        self.grads, self.eps = {}, cfg.eps

    def forward(self, x):
        self.xc = x - x.mean(axis=-1, keepdims=True)
        self.rstd = 1 / np.sqrt((self.xc ** 2).mean(axis=-1, keepdims=True) + self.eps)
        self.xhat = self.xc * self.rstd
        return self.params["gamma"] * self.xhat + self.params["beta"]

    def backward(self, g):
        D = g.shape[-1]
        self.grads["gamma"] = (g * self.xc).reshape(-1, D).sum(axis=0)        # BUG: xc, not xhat
        self.grads["beta"] = g.reshape(-1, D).sum(axis=0)
        dxhat = g * self.params["gamma"]
        return self.rstd * (dxhat - dxhat.mean(-1, keepdims=True)
                            - self.xhat * (dxhat * self.xhat).mean(-1, keepdims=True))


@gradlab.register("layernorm")
def build(cfg):
    return LayerNorm(cfg)
