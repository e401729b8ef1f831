"""Broken: PyTorch's padding_idx=0 habit: the gradient row of id 0 is zeroed (the contract has no padding id)."""
import numpy as np

import gradlab


class Embedding:
    def __init__(self, V, D, dtype, seed):
        self.weight = (0.1 * np.random.default_rng(seed).standard_normal((V, D))).astype(dtype)

    def forward(self, ids):
        self.ids = ids
        return self.weight[ids]

    def backward(self, g):
        self.grad_weight = np.zeros_like(self.weight)
        np.add.at(self.grad_weight, self.ids, g)
        self.grad_weight[0] = 0                                        # BUG: no padding id in the contract


@gradlab.register("embedding")
def build(cfg):
    return Embedding(cfg.vocab_size, cfg.d_model, cfg.dtype, cfg.seed)
