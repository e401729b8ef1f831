"""The stale-rows bug with the table kept as (1, max_len, d_model), a leading axis of 1 the contract allows."""
import numpy as np

import gradlab


class Positions:
    def __init__(self, max_len, d_model, dtype):
        self.params = {"weight": np.random.normal(scale=0.02, size=(1, max_len, d_model)).astype(dtype)}
        self.grads = {"weight": np.zeros((1, max_len, d_model), dtype)}

    def forward(self, x):
        self.T = x.shape[1]
        return x + self.params["weight"][:, :self.T]

    def backward(self, grad):
        self.grads["weight"][:, :self.T] = grad.sum(axis=0, keepdims=True)
        return grad


@gradlab.register("positional")
def build(cfg):
    return Positions(cfg.max_len, cfg.d_model, cfg.dtype)
