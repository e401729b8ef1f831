"""Style: a layer that keeps its arrays private (self._gamma, self._dgamma) and
exposes `params` / `grads` as read-only properties building the dicts on the fly,
as an adapter over a layer written for another training loop would.
Registered as is (CONTRACT §2: an attribute is whatever getattr returns)."""
import numpy as np

import gradlab


class LayerNorm:
    def __init__(self, dim, eps=1e-5, dtype="float64"):
        self._gamma = np.ones(dim, dtype=dtype)
        self._beta = np.zeros(dim, dtype=dtype)
        self._dgamma = None              # created by the first backward
        self._dbeta = None
        self.eps = eps

    @property
    def params(self):
        return {"gamma": self._gamma, "beta": self._beta}

    @property
    def grads(self):
        if self._dgamma is None:
            return {}
        return {"gamma": self._dgamma, "beta": self._dbeta}

    @property
    def normalized(self):               # a property reading a cache: raises before the first forward
        return self._cache[0]

    def forward(self, x):
        mu = x.mean(axis=-1, keepdims=True)
        inv_std = 1.0 / np.sqrt(x.var(axis=-1, keepdims=True) + self.eps)
        xhat = (x - mu) * inv_std
        self._cache = (xhat, inv_std)
        return self._gamma * xhat + self._beta

    def backward(self, dout):
        xhat, inv_std = self._cache
        lead = tuple(range(dout.ndim - 1))
        self._dgamma = (dout * xhat).sum(axis=lead)
        self._dbeta = dout.sum(axis=lead)
        return self._dx(dout * self._gamma, xhat, inv_std)

    def _dx(self, dxhat, xhat, inv_std):
        return inv_std * (dxhat - dxhat.mean(-1, keepdims=True) - xhat * (dxhat * xhat).mean(-1, keepdims=True))


@gradlab.register("layernorm")
def build(cfg):
    return LayerNorm(cfg.d_model, cfg.eps, cfg.dtype)
