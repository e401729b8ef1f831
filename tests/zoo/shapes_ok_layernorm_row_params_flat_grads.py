"""Correct: nnfs-style (1, D) gamma and beta, whose gradients backward leaves as (D,) (summed over the
rows without keepdims): the same numbers as the parameter's; an update p -= lr * g broadcasts."""
import numpy as np

import gradlab


class LayerNorm:
    def __init__(self, cfg):
        D = cfg.d_model
        self.gamma = np.ones((1, D), dtype=cfg.dtype)
        self.beta = np.zeros((1, D), dtype=cfg.dtype)
        self.eps = cfg.eps

    def forward(self, x):
        mu = x.mean(axis=-1, keepdims=True)
        self.xc = x - mu
        self.inv = 1.0 / np.sqrt((self.xc ** 2).mean(axis=-1, keepdims=True) + self.eps)
        self.xhat = self.xc * self.inv
        return self.gamma * self.xhat + self.beta

    def backward(self, dout):
        D = dout.shape[-1]
        self.dgamma = (dout * self.xhat).reshape(-1, D).sum(axis=0)      # (D,)
        self.dbeta = dout.reshape(-1, D).sum(axis=0)                     # (D,)
        dxhat = dout * self.gamma
        return self.inv * (dxhat - dxhat.mean(-1, keepdims=True)
                           - self.xhat * (dxhat * self.xhat).mean(-1, keepdims=True))


@gradlab.register("layernorm")
def build(cfg):
    return LayerNorm(cfg)
