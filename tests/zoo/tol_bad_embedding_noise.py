"""Broken: an embedding whose forward adds fresh noise on every call (a 'regularising' jitter left on):
no finite difference of it means anything."""
import numpy as np

import gradlab


class NoisyEmbedding:
    def __init__(self, cfg):
        self.params = {"weight": np.random.default_rng(0).normal(0, 1, (cfg.vocab_size, cfg.d_model))}
        self.grads = {}

    def forward(self, ids):
        self.ids = ids
        W = self.params["weight"]
        return W[ids] + 1e-3 * np.random.standard_normal(ids.shape + (W.shape[1],))   # BUG: noise in forward

    def backward(self, g):
        dW = np.zeros_like(self.params["weight"])
        np.add.at(dW, self.ids, g)
        self.grads["weight"] = dW


@gradlab.register("embedding")
def build(cfg):
    return NoisyEmbedding(cfg)
