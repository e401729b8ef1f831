"""LayerNorm that squeezes its input "so (T, D) inputs work too": x.squeeze()
also drops the batch axis when B == 1 and the time axis when T == 1, and
backward then returns the wrong shape. Right at the default sizes (B=2, T=5);
`--explore` finds it at a batch of one (or a single token)."""
import numpy as np

import gradlab


class LayerNorm:
    def __init__(self, d_model, eps, dtype):
        self.eps = eps
        self.params = {"gamma": np.ones(d_model, dtype=dtype), "beta": np.zeros(d_model, dtype=dtype)}
        self.grads = {}

    def forward(self, x):
        x = x.squeeze()
        mu = x.mean(axis=-1, keepdims=True)
        self.inv_std = 1 / np.sqrt(x.var(axis=-1, keepdims=True) + self.eps)
        self.xhat = (x - mu) * self.inv_std
        return (self.params["gamma"] * self.xhat + self.params["beta"]).reshape(-1, *x.shape[-2:]) \
            if x.ndim >= 2 else (self.params["gamma"] * self.xhat + self.params["beta"])[None, None]

    def backward(self, g):
        g = g.squeeze()
        D = g.shape[-1]
        self.grads["gamma"] = (g * self.xhat).reshape(-1, D).sum(axis=0)
        self.grads["beta"] = g.reshape(-1, D).sum(axis=0)
        dxhat = g * self.params["gamma"]
        return self.inv_std * (dxhat - dxhat.mean(axis=-1, keepdims=True)
                               - self.xhat * (dxhat * self.xhat).mean(axis=-1, keepdims=True))


@gradlab.register("layernorm")
def build(cfg):
    return LayerNorm(cfg.d_model, cfg.eps, cfg.dtype)
