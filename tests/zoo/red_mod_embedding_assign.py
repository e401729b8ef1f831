"""Broken: dW[ids] = g (fancy-index assignment: repeated ids keep only one row)."""
import numpy as np

import gradlab


class Embedding:
    def __init__(self, cfg):
        self.params = {"weight": np.random.default_rng(1).normal(size=(cfg.vocab_size, cfg.d_model)).astype(cfg.dtype)}
        self.grads = {"weight": np.zeros_like(self.params["weight"])}

    def forward(self, ids):
        self.ids = ids
        return self.params["weight"][ids]

    def backward(self, g):
        dW = np.zeros_like(self.params["weight"])
        dW[self.ids] = g            # BUG: np.add.at(dW, self.ids, g)
        self.grads["weight"] = dW


@gradlab.register("embedding")
def build(cfg):
    return Embedding(cfg)
