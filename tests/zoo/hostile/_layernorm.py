"""A correct LayerNorm the hostile files below build on (each adds one bad
behaviour). Not a submission itself: it registers nothing."""
import numpy as np


class LayerNorm:
    def __init__(self, d_model, eps=1e-5):
        self.eps = eps
        self.params = {"gamma": np.ones(d_model), "beta": np.zeros(d_model)}
        self.grads = {}

    def forward(self, x):
        self.mu = x.mean(-1, keepdims=True)
        self.inv = 1.0 / np.sqrt(x.var(-1, keepdims=True) + self.eps)
        self.xhat = (x - self.mu) * self.inv
        return self.params["gamma"] * self.xhat + self.params["beta"]

    def backward(self, g):
        D = g.shape[-1]
        self.grads["gamma"] = (g * self.xhat).reshape(-1, D).sum(0)
        self.grads["beta"] = g.reshape(-1, D).sum(0)
        dxhat = g * self.params["gamma"]
        return self.inv / D * (D * dxhat - dxhat.sum(-1, keepdims=True)
                               - self.xhat * (dxhat * self.xhat).sum(-1, keepdims=True))
