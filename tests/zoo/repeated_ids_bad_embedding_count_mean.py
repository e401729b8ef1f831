"""Broken: np.add.at sums the occurrences, then each row is divided by how often its id occurs (a mean)."""
import numpy as np

import gradlab


class Embedding:
    def __init__(self, V, D, dtype):
        self.table = (np.random.default_rng(3).standard_normal((V, D)) * 0.1).astype(dtype)
        self.grad_table = np.zeros_like(self.table)

    def forward(self, ids):
        self.ids = ids
        return self.table[ids]

    def backward(self, g):
        total = np.zeros_like(self.table)
        np.add.at(total, self.ids, g)
        seen = np.bincount(self.ids.ravel(), minlength=len(self.table))
        self.grad_table = total / np.maximum(seen, 1)[:, None]        # BUG: a mean over the occurrences


@gradlab.register("embedding", param_map={"table": "weight"})
def build(cfg):
    return Embedding(cfg.vocab_size, cfg.d_model, cfg.dtype)
