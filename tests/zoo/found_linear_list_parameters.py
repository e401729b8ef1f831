"""PyTorch habits: parameters() returns a list (no names), so gradlab must fall
back to attribute pairs weight/grad_weight, bias/grad_bias (CONTRACT §2)."""
import numpy as np

import gradlab


class Linear:
    def __init__(self, d_in, d_out):
        rng = np.random.default_rng(0)
        self.weight = rng.normal(0, d_in ** -0.5, (d_in, d_out))
        self.bias = np.zeros(d_out)

    def parameters(self):
        return [self.weight, self.bias]

    def forward(self, x):
        self.x = x
        return x @ self.weight + self.bias

    def backward(self, dy):
        self.grad_weight = np.einsum("bti,bto->io", self.x, dy)
        self.grad_bias = dy.sum(axis=(0, 1))
        return dy @ self.weight.T


@gradlab.register("linear")
def build(cfg):
    return Linear(cfg.d_model, cfg.d_ff)
