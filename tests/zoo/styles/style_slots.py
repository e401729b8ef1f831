"""Style: a memory-conscious embedding with __slots__ (no instance __dict__): the
table and its gradient are slot members, `weight` / `dweight` (CONTRACT §2's
attribute pairs, read through getattr). The gradient buffer is allocated lazily."""
import numpy as np

import gradlab


class Embedding:
    __slots__ = ("weight", "dweight", "ids")

    def __init__(self, vocab_size, d_model, dtype="float64", seed=0):
        self.weight = (0.02 * np.random.default_rng(seed).standard_normal((vocab_size, d_model))).astype(dtype)

    def forward(self, ids):
        self.ids = ids
        return self.weight[ids]

    def backward(self, dout):
        self.dweight = np.zeros_like(self.weight)
        self.scatter(dout)

    def scatter(self, dout):
        np.add.at(self.dweight, self.ids, dout)


@gradlab.register("embedding")
def build(cfg):
    return Embedding(cfg.vocab_size, cfg.d_model, cfg.dtype, cfg.seed)
