"""Correct, float32-only: the student casts everything to float32 whatever cfg.dtype
says (a common habit to save memory), with the compact backward formula."""
import numpy as np

import gradlab


class LayerNorm32:
    def __init__(self, dim, eps=1e-5):
        self.eps = np.float32(eps)
        self.params = {"gamma": np.ones(dim, np.float32), "beta": np.zeros(dim, np.float32)}
        self.grads = {"gamma": np.zeros(dim, np.float32), "beta": np.zeros(dim, np.float32)}

    def forward(self, x):
        x = x.astype(np.float32)
        mu = x.mean(-1, keepdims=True)
        xc = x - mu
        var = (xc * xc).mean(-1, keepdims=True)
        self.rstd = 1.0 / np.sqrt(var + self.eps)
        self.xhat = xc * self.rstd
        return self.xhat * self.params["gamma"] + self.params["beta"]

    def backward(self, dy):
        dy = dy.astype(np.float32)
        N = dy.shape[-1]
        self.grads["gamma"] = (dy * self.xhat).reshape(-1, N).sum(0)
        self.grads["beta"] = dy.reshape(-1, N).sum(0)
        dxhat = dy * self.params["gamma"]
        return (self.rstd / N) * (N * dxhat - dxhat.sum(-1, keepdims=True)
                                  - self.xhat * (dxhat * self.xhat).sum(-1, keepdims=True))


@gradlab.register("layernorm")
def build(cfg):
    return LayerNorm32(cfg.d_model, cfg.eps)
