"""Layer normalisation over the last axis (biased variance)."""
import numpy as np

import gradlab


def layernorm(x, gamma, beta, eps):
    """x (..., D) -> (gamma * xhat + beta, cache), xhat = (x - mean) / sqrt(var + eps) over the last axis."""
    mu = x.mean(axis=-1, keepdims=True)                         # (..., 1)
    var = x.var(axis=-1, keepdims=True)                         # (..., 1), biased: divides by D
    inv_std = 1 / np.sqrt(var + eps)                            # (..., 1)
    xhat = (x - mu) * inv_std                                   # (..., D)
    return gamma * xhat + beta, (xhat, inv_std)


def layernorm_backward(grad_out, cache, gamma):                 # grad_out (..., D) -> (dx, dgamma, dbeta)
    xhat, inv_std = cache
    D = grad_out.shape[-1]
    dgamma = (grad_out * xhat).reshape(-1, D).sum(axis=0)       # (D,)
    dbeta = grad_out.reshape(-1, D).sum(axis=0)                 # (D,)
    dxhat = grad_out * gamma                                    # (..., D)
    # mean and variance depend on every x in the row: remove the part of
    # dxhat along 1 and along xhat, the two directions normalising takes out.
    dx = inv_std * (dxhat - dxhat.mean(axis=-1, keepdims=True) - xhat * (dxhat * xhat).mean(axis=-1, keepdims=True))
    return dx, dgamma, dbeta


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
        out, (self.xhat, self.inv_std) = layernorm(x, self.params["gamma"], self.params["beta"], self.eps)
        return out

    def backward(self, grad_out):                               # grad_out (..., D)
        dx, self.grads["gamma"], self.grads["beta"] = layernorm_backward(grad_out, (self.xhat, self.inv_std),
                                                                        self.params["gamma"])
        return dx


@gradlab.register("layernorm")
def build(cfg):
    return LayerNorm(cfg.d_model, eps=cfg.eps, dtype=cfg.dtype, seed=cfg.seed)
