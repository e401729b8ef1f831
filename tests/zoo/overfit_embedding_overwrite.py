"""Broken: embedding gradient written with dW[ids] = g (repeated ids overwrite each other)."""
import numpy as np

import gradlab


class Embedding:
    def __init__(self, V, D, dtype):
        self.params = {"weight": np.random.default_rng(0).normal(size=(V, D)).astype(dtype) / np.sqrt(D)}
        self.grads = {}

    def forward(self, ids):
        self.ids = ids
        return self.params["weight"][ids]

    def backward(self, g):
        dW = np.zeros_like(self.params["weight"])
        dW[self.ids] = g
        self.grads["weight"] = dW


@gradlab.register("embedding")
def build(cfg):
    return Embedding(cfg.vocab_size, cfg.d_model, cfg.dtype)
