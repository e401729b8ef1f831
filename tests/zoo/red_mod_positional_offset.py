"""Broken: positions counted from 1, so forward adds weight[1:T+1]; backward is
consistent with it (gradient lands in rows 1..T)."""
import numpy as np

import gradlab


class PositionalEmbedding:
    def __init__(self, cfg):
        self.params = {"weight": (0.1 * np.random.default_rng(4).standard_normal((cfg.max_len, cfg.d_model))).astype(cfg.dtype)}
        self.grads = {}

    def forward(self, x):
        T = x.shape[1]
        self.T = T
        return x + self.params["weight"][1:T + 1]      # BUG: weight[:T]

    def backward(self, g):
        dW = np.zeros_like(self.params["weight"])
        dW[1:self.T + 1] = g.sum(axis=0)
        self.grads["weight"] = dW
        return g


@gradlab.register("positional")
def build(cfg):
    return PositionalEmbedding(cfg)
