"""Correct: an FFN whose parameters and gradients are views into one flat vector each (the layout of code
written for an optimizer over a single vector, L-BFGS or Ng's unrolled parameters). `flat`/`flat_grad`
pair up by name, but they are the storage of W1, b1, W2, b2, not a fifth parameter."""
import numpy as np

import gradlab

C = np.sqrt(2 / np.pi)


class FlatFFN:
    def __init__(self, cfg):
        D, F = cfg.d_model, cfg.d_ff
        self.shapes = [("W1", (D, F)), ("b1", (F,)), ("W2", (F, D)), ("b2", (D,))]
        total = sum(int(np.prod(s)) for _, s in self.shapes)
        rng = np.random.default_rng(cfg.seed)
        self.flat = (0.2 * rng.standard_normal(total)).astype(cfg.dtype)
        self.flat_grad = np.zeros_like(self.flat)
        at = 0
        for name, shape in self.shapes:
            n = int(np.prod(shape))
            setattr(self, name, self.flat[at:at + n].reshape(shape))
            setattr(self, "d" + name, self.flat_grad[at:at + n].reshape(shape))
            at += n

    def forward(self, x):
        self.x = x
        self.h = x @ self.W1 + self.b1
        self.t = np.tanh(C * (self.h + 0.044715 * self.h ** 3))
        self.a = 0.5 * self.h * (1 + self.t)
        return self.a @ self.W2 + self.b2

    def backward(self, g):
        D, F = self.W1.shape
        self.dW2[...] = self.a.reshape(-1, F).T @ g.reshape(-1, D)
        self.db2[...] = g.reshape(-1, D).sum(0)
        h, t = self.h, self.t
        dh = (g @ self.W2.T) * (0.5 * (1 + t) + 0.5 * h * (1 - t * t) * C * (1 + 3 * 0.044715 * h * h))
        self.dW1[...] = self.x.reshape(-1, D).T @ dh.reshape(-1, F)
        self.db1[...] = dh.reshape(-1, F).sum(0)
        return dh @ self.W1.T


@gradlab.register("ffn")
def build(cfg):
    return FlatFFN(cfg)
