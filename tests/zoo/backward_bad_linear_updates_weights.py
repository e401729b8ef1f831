"""Broken: a linear layer whose backward applies the SGD step itself, as many tutorials write it
(backward(dout) ends with W -= lr * dW): every later call sees other weights."""
import numpy as np

import gradlab


class Linear:
    def __init__(self, cfg, lr=0.01):
        rng = np.random.default_rng(cfg.seed)
        self.W = (rng.standard_normal((cfg.d_model, cfg.d_ff)) / np.sqrt(cfg.d_model)).astype(cfg.dtype)
        self.b = np.zeros(cfg.d_ff, dtype=cfg.dtype)
        self.lr = lr

    def forward(self, x):
        self.x = x
        return x @ self.W + self.b

    def backward(self, dout):
        x2, g2 = self.x.reshape(-1, self.W.shape[0]), dout.reshape(-1, self.W.shape[1])
        self.dW, self.db = x2.T @ g2, g2.sum(axis=0)
        dx = dout @ self.W.T
        self.W -= self.lr * self.dW
        self.b -= self.lr * self.db
        return dx


@gradlab.register("linear")
def build(cfg):
    return Linear(cfg)
