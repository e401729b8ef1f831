"""Position-wise feed-forward network: x @ w1 + b1 -> GELU (or ReLU) -> @ w2 + b2."""
import math

import numpy as np

import gradlab

# GELU, tanh approximation: 0.5 h (1 + tanh(C (h + 0.044715 h^3))).
_C = math.sqrt(2 / math.pi)   # a Python float, so float32 inputs stay float32


class FeedForward:
    """x (..., D) -> act(x @ w1 + b1) @ w2 + b2 (..., D). w1 (D, d_ff), w2 (d_ff, D).
    activation "gelu" (tanh approximation, the default) or "relu"."""

    def __init__(self, d_model, d_ff, activation="gelu", dtype="float64", seed=0):
        assert activation in ("gelu", "relu"), f"activation must be 'gelu' or 'relu', not {activation!r}"
        rng = np.random.default_rng(seed)
        self.activation = activation
        self.params = {
            "w1": (rng.standard_normal((d_model, d_ff)) / np.sqrt(d_model)).astype(dtype),
            "b1": (0.1 * rng.standard_normal(d_ff)).astype(dtype),
            "w2": (rng.standard_normal((d_ff, d_model)) / np.sqrt(d_ff)).astype(dtype),
            "b2": (0.1 * rng.standard_normal(d_model)).astype(dtype),
        }
        self.grads = {k: np.zeros_like(v) for k, v in self.params.items()}

    def forward(self, x):                                   # x (..., D)
        p = self.params
        self.x = x
        self.h = x @ p["w1"] + p["b1"]                      # (..., d_ff)
        if self.activation == "relu":
            self.a = np.maximum(self.h, 0)
        else:
            self.t = np.tanh(_C * (self.h + 0.044715 * self.h ** 3))
            self.a = 0.5 * self.h * (1 + self.t)            # (..., d_ff)
        return self.a @ p["w2"] + p["b2"]                   # (..., D)

    def backward(self, grad_out):                           # grad_out (..., D)
        p = self.params
        D, F = p["w1"].shape
        g2 = grad_out.reshape(-1, D)                        # (N, D)
        self.grads["w2"] = self.a.reshape(-1, F).T @ g2     # (d_ff, D)
        self.grads["b2"] = g2.sum(axis=0)                   # (D,)
        da = grad_out @ p["w2"].T                           # (..., d_ff)
        if self.activation == "relu":
            dh = da * (self.h > 0)
        else:   # d/dh of 0.5 h (1 + t), t = tanh(u), u = C (h + 0.044715 h^3)
            h, t = self.h, self.t
            dh = da * (0.5 * (1 + t) + 0.5 * h * (1 - t * t) * _C * (1 + 3 * 0.044715 * h * h))
        dh2 = dh.reshape(-1, F)                             # (N, d_ff)
        self.grads["w1"] = self.x.reshape(-1, D).T @ dh2    # (D, d_ff)
        self.grads["b1"] = dh2.sum(axis=0)                  # (d_ff,)
        return dh @ p["w1"].T                               # (..., D)


@gradlab.register("ffn")
def build(cfg):
    return FeedForward(cfg.d_model, cfg.d_ff, activation=cfg.activation, dtype=cfg.dtype, seed=cfg.seed)
