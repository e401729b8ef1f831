"""Correct: a plain Python loop that accumulates one occurrence at a time."""
import numpy as np

import gradlab


class Embedding:
    def __init__(self, V, D, dtype):
        self.params = {"weight": (np.random.default_rng(10).standard_normal((V, D)) * 0.1).astype(dtype)}
        self.grads = {}

    def forward(self, ids):
        self.ids = ids
        return self.params["weight"][ids]

    def backward(self, g):
        dW = np.zeros_like(self.params["weight"])
        for b in range(self.ids.shape[0]):
            for t in range(self.ids.shape[1]):
                dW[self.ids[b, t]] += g[b, t]
        self.grads["weight"] = dW


@gradlab.register("embedding")
def build(cfg):
    return Embedding(cfg.vocab_size, cfg.d_model, cfg.dtype)
