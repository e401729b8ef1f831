"""Broken: the gradient buffer is allocated once in __init__ and np.add.at accumulates
into it on every backward call, never zeroed (PyTorch-style accumulation without
zero_grad)."""
import numpy as np

import gradlab


class Embedding:
    def __init__(self, V, D, dtype):
        self.weight = np.random.default_rng(0).standard_normal((V, D)).astype(dtype) * 0.1
        self.grad_weight = np.zeros_like(self.weight)

    def forward(self, ids):
        self.ids = ids
        return np.take(self.weight, ids, axis=0)

    def backward(self, grad_out):
        np.add.at(self.grad_weight, self.ids, grad_out)    # BUG: never reset between calls


@gradlab.register("embedding")
def build(cfg):
    return Embedding(cfg.vocab_size, cfg.d_model, cfg.dtype)
