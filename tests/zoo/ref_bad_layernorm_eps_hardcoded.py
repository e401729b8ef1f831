"""Broken quietly: a correct LayerNorm whose build leaves eps at the class default 1e-5 (cfg.eps is never
passed on). At the default cfg.eps of 1e-5 it is exact; the reference check moves cfg.eps."""
import numpy as np

import gradlab


class LayerNorm:
    def __init__(self, d, eps=1e-5, dtype="float64"):
        self.eps = eps
        self.gamma, self.beta = np.ones(d, dtype), np.zeros(d, dtype)

    def forward(self, x):
        self.rstd = 1 / np.sqrt(x.var(-1, keepdims=True) + self.eps)
        self.xhat = (x - x.mean(-1, keepdims=True)) * self.rstd
        return self.gamma * self.xhat + self.beta

    def backward(self, dy):
        D = dy.shape[-1]
        self.dgamma = (dy * self.xhat).reshape(-1, D).sum(0)
        self.dbeta = dy.reshape(-1, D).sum(0)
        d = dy * self.gamma
        return self.rstd * (d - d.mean(-1, keepdims=True) - self.xhat * (d * self.xhat).mean(-1, keepdims=True))


@gradlab.register("layernorm")
def build(cfg):
    return LayerNorm(cfg.d_model, dtype=cfg.dtype)               # BUG: eps=cfg.eps is not passed
