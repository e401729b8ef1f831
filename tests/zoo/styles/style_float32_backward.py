"""Correct: exact forwards (a lookup, an addition) whose backwards accumulate in float32 to save memory,
then store float64 gradients: the gradients are float32 numbers in float64 arrays while nothing in the
forward shows float32 (CONTRACT §6). The embedding's backward is a one-hot matrix product."""
import numpy as np

import gradlab


class Embedding:
    def __init__(self, vocab, d, dtype, seed):
        self.W = (0.1 * np.random.default_rng(seed).standard_normal((vocab, d))).astype(dtype)
        self.dW = np.zeros_like(self.W)

    def forward(self, ids):
        self.ids = ids
        return self.W[ids]

    def backward(self, g):
        onehot = np.eye(self.W.shape[0], dtype=np.float32)[self.ids.reshape(-1)]       # (B*T, V)
        self.dW = self.accumulate(onehot, g.reshape(-1, g.shape[-1]).astype(np.float32)).astype(self.W.dtype)

    @staticmethod
    def accumulate(onehot, rows):
        return onehot.T @ rows                     # every occurrence of an id adds its row


class Positional:
    def __init__(self, max_len, d, dtype, seed):
        self.weight = (0.02 * np.random.default_rng(seed).standard_normal((max_len, d))).astype(dtype)
        self.grad_weight = np.zeros_like(self.weight)

    def forward(self, x):
        self.T = x.shape[1]
        return x + self.weight[:self.T]

    def backward(self, g):
        self.grad_weight = np.zeros_like(self.weight)
        self.grad_weight[:self.T] = self.batch_total(g.astype(np.float32))
        return g

    @staticmethod
    def batch_total(g):
        return g.sum(axis=0)


@gradlab.register("embedding")
def embedding(cfg):
    return Embedding(cfg.vocab_size, cfg.d_model, cfg.dtype, cfg.seed)


@gradlab.register("positional")
def positional(cfg):
    return Positional(cfg.max_len, cfg.d_model, cfg.dtype, cfg.seed)
