"""Broken for gradlab (a spelling it cannot know): gamma's gradient is dgamma, beta's is under
beta_delta, which is no gradient name of CONTRACT §2; shapes must say that beta is there and what was
looked for, not only that 'beta' is not found."""
import numpy as np

import gradlab


class LayerNorm:
    def __init__(self, cfg):
        self.gamma = np.ones(cfg.d_model, dtype=cfg.dtype)
        self.beta = np.zeros(cfg.d_model, dtype=cfg.dtype)
        self.eps = cfg.eps

    def forward(self, x):
        self.mu = x.mean(-1, keepdims=True)
        self.inv = 1.0 / np.sqrt(x.var(-1, keepdims=True) + self.eps)
        self.xhat = (x - self.mu) * self.inv
        return self.gamma * self.xhat + self.beta

    def backward(self, dy):
        D = dy.shape[-1]
        self.dgamma = (dy * self.xhat).reshape(-1, D).sum(0)
        self.beta_delta = dy.reshape(-1, D).sum(0)
        dxhat = dy * self.gamma
        return self.inv * (dxhat - dxhat.mean(-1, keepdims=True)
                           - self.xhat * (dxhat * self.xhat).mean(-1, keepdims=True))


@gradlab.register("layernorm")
def build(cfg):
    return LayerNorm(cfg)
