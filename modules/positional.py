"""Learned positional embedding: x + weight[:T]."""
import numpy as np

import gradlab


class LearnedPositional:
    """x (B, T, D) -> x + weight[:T] (B, T, D). weight (max_len, D); needs T <= max_len."""

    def __init__(self, max_len, d_model, dtype="float64", seed=0):
        rng = np.random.default_rng(seed)
        self.params = {"weight": (rng.standard_normal((max_len, d_model)) / np.sqrt(d_model)).astype(dtype)}
        self.grads = {"weight": np.zeros_like(self.params["weight"])}

    def forward(self, x):                       # x (B, T, D)
        T, max_len = x.shape[1], self.params["weight"].shape[0]
        assert T <= max_len, f"sequence length {T} is longer than max_len={max_len}"
        self.T = T
        return x + self.params["weight"][:T]    # (T, D) broadcast over B -> (B, T, D)

    def backward(self, grad_out):               # grad_out (B, T, D)
        dW = np.zeros_like(self.params["weight"])               # (max_len, D)
        dW[:self.T] = grad_out.sum(axis=0)      # summed over the batch; rows >= T get nothing
        self.grads["weight"] = dW
        return grad_out.copy()                  # the addition passes the gradient through


@gradlab.register("positional")
def build(cfg):
    return LearnedPositional(cfg.max_len, cfg.d_model, dtype=cfg.dtype, seed=cfg.seed)
