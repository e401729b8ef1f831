"""Correct: learned positions as attribute pos with pos_grad, cache of T only."""
import numpy as np

import gradlab


class LearnedPositions:
    def __init__(self, max_len, d_model, dtype="float64"):
        self.pos = np.random.normal(scale=0.02, size=(max_len, d_model)).astype(dtype)
        self.pos_grad = np.zeros_like(self.pos)

    def forward(self, x):
        self.T = x.shape[-2]
        return x + self.pos[np.arange(self.T)]

    def backward(self, grad):
        self.pos_grad = np.zeros_like(self.pos)
        self.pos_grad[:self.T] = grad.reshape(-1, self.T, grad.shape[-1]).sum(axis=0)
        return grad


@gradlab.register("positional")
def build(cfg):
    return LearnedPositions(cfg.max_len, cfg.d_model, cfg.dtype)
