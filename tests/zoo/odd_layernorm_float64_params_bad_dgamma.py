"""A LayerNorm with float64 parameters whatever cfg.dtype says (as examples/student_modules.py), with dgamma
twice too large."""
import numpy as np

import gradlab


class LayerNorm:
    def __init__(self, dim, eps):
        self.eps, self.gamma, self.beta, self._grads = eps, np.ones(dim), np.zeros(dim), {}

    def parameters(self):
        return {"gamma": self.gamma, "beta": self.beta}

    def gradients(self):
        return self._grads

    def forward(self, x):
        self.mu = x.mean(-1, keepdims=True)
        self.var = ((x - self.mu) ** 2).mean(-1, keepdims=True)
        self.xhat = (x - self.mu) / np.sqrt(self.var + self.eps)
        return self.gamma * self.xhat + self.beta

    def backward(self, dy):
        D = dy.shape[-1]
        self._grads["gamma"] = 2 * (dy * self.xhat).reshape(-1, D).sum(0)       # twice too large
        self._grads["beta"] = dy.reshape(-1, D).sum(0)
        dxhat = dy * self.gamma
        inv = 1 / np.sqrt(self.var + self.eps)
        return inv / D * (D * dxhat - dxhat.sum(-1, keepdims=True)
                          - self.xhat * (dxhat * self.xhat).sum(-1, keepdims=True))


@gradlab.register("layernorm")
def build(cfg):
    return LayerNorm(cfg.d_model, cfg.eps)
