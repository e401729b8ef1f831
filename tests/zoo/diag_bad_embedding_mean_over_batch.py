"""Broken: the table's gradient is divided by the batch size (a PyTorch reduction='mean' habit carried into
backward): every row is 1/B of the right one."""
import numpy as np

import gradlab


class Embedding:
    def __init__(self, V, D, dtype, seed):
        self.params = {"W": (0.1 * np.random.default_rng(seed).standard_normal((V, D))).astype(dtype)}
        self.grads = {}

    def forward(self, ids):
        self.ids = ids
        return self.params["W"][ids]

    def backward(self, dout):
        dW = np.zeros_like(self.params["W"])
        np.add.at(dW, self.ids, dout)
        self.grads["W"] = dW / self.ids.shape[0]                         # BUG: a mean over the batch


@gradlab.register("embedding")
def build(cfg):
    return Embedding(cfg.vocab_size, cfg.d_model, cfg.dtype, cfg.seed)
