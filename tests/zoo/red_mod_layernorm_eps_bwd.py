"""Broken: forward uses sqrt(var + eps), backward recomputes the inverse std as
1 / (sqrt(var) + eps) (eps outside the square root)."""
import numpy as np

import gradlab


class LayerNorm:
    def __init__(self, D, eps):
        self.gamma, self.beta, self.eps = np.ones(D), np.zeros(D), eps
        self.dgamma, self.dbeta = np.zeros(D), np.zeros(D)

    def forward(self, x):
        self.x = x
        m = x.mean(-1, keepdims=True)
        v = ((x - m) ** 2).mean(-1, keepdims=True)
        return self.gamma * (x - m) / np.sqrt(v + self.eps) + self.beta

    def backward(self, dy):
        x = self.x
        m = x.mean(-1, keepdims=True)
        v = ((x - m) ** 2).mean(-1, keepdims=True)
        inv = 1.0 / (np.sqrt(v) + self.eps)          # BUG: forward has sqrt(v + eps)
        xhat = (x - m) * inv
        self.dgamma[:] = (dy * xhat).sum((0, 1))
        self.dbeta[:] = dy.sum((0, 1))
        dxh = dy * self.gamma
        return inv * (dxh - dxh.mean(-1, keepdims=True) - xhat * (dxh * xhat).mean(-1, keepdims=True))


@gradlab.register("layernorm")
def build(cfg):
    return LayerNorm(cfg.d_model, cfg.eps)
