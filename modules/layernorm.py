"""Layer normalisation over the last axis (biased variance)."""
import numpy as np

import gradlab


class LayerNorm:
    """x (..., D) -> gamma * (x - mean) / sqrt(var + eps) + beta, statistics over the last axis."""

    def __init__(self, d_model, eps=1e-5, dtype="float64", seed=0):
        rng = np.random.default_rng(seed)
        self.eps = eps
        self.params = {
            "gamma": (1 + 0.1 * rng.standard_normal(d_model)).astype(dtype),
            "beta": (0.1 * rng.standard_normal(d_model)).astype(dtype),
        }
        self.grads = {k: np.zeros_like(v) for k, v in self.params.items()}

    def forward(self, x):                                       # x (..., D)
        mu = x.mean(axis=-1, keepdims=True)                     # (..., 1)
        var = x.var(axis=-1, keepdims=True)                     # (..., 1), biased: divides by D
        self.inv_std = 1 / np.sqrt(var + self.eps)              # (..., 1)
        self.xhat = (x - mu) * self.inv_std                     # (..., D)
        return self.params["gamma"] * self.xhat + self.params["beta"]

    def backward(self, grad_out):                               # grad_out (..., D)
        D = grad_out.shape[-1]
        self.grads["gamma"] = (grad_out * self.xhat).reshape(-1, D).sum(axis=0)   # (D,)
        self.grads["beta"] = grad_out.reshape(-1, D).sum(axis=0)                  # (D,)
        dxhat = grad_out * self.params["gamma"]                                   # (..., D)
        # mean and variance depend on every x in the row: remove the part of
        # dxhat along 1 and along xhat, the two directions normalising takes out.
        return self.inv_std * (dxhat - dxhat.mean(axis=-1, keepdims=True)
                               - self.xhat * (dxhat * self.xhat).mean(axis=-1, keepdims=True))


@gradlab.register("layernorm")
def build(cfg):
    return LayerNorm(cfg.d_model, eps=cfg.eps, dtype=cfg.dtype, seed=cfg.seed)
