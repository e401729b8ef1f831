"""Correct: parameters() + gradients() methods, honours cfg.activation ("gelu" = tanh
approximation, "relu"), activation picked as a pair of functions at build time."""
import numpy as np

import gradlab

C = np.sqrt(2.0 / np.pi)


def gelu(z):
    return 0.5 * z * (1.0 + np.tanh(C * (z + 0.044715 * z ** 3)))


def gelu_grad(z):
    t = np.tanh(C * (z + 0.044715 * z ** 3))
    return 0.5 * (1.0 + t) + 0.5 * z * (1.0 - t ** 2) * C * (1.0 + 3 * 0.044715 * z ** 2)


def relu(z):
    return np.maximum(z, 0)


def relu_grad(z):
    return (z > 0).astype(z.dtype)


class MLP:
    def __init__(self, d_model, d_ff, activation="gelu", dtype="float64"):
        r = np.random.RandomState(3)
        self._p = {"w1": r.randn(d_model, d_ff).astype(dtype) * 0.2, "b1": np.zeros(d_ff, dtype),
                   "w2": r.randn(d_ff, d_model).astype(dtype) * 0.2, "b2": np.zeros(d_model, dtype)}
        self._g = {}
        self.act, self.act_grad = {"gelu": (gelu, gelu_grad), "relu": (relu, relu_grad)}[activation]

    def parameters(self):
        return self._p

    def gradients(self):
        return self._g

    def forward(self, x):
        self.x = x
        self.z = x @ self._p["w1"] + self._p["b1"]
        self.a = self.act(self.z)
        return self.a @ self._p["w2"] + self._p["b2"]

    def backward(self, dy):
        D, F = self._p["w1"].shape
        self._g["w2"] = self.a.reshape(-1, F).T @ dy.reshape(-1, D)
        self._g["b2"] = dy.sum(axis=tuple(range(dy.ndim - 1)))
        dz = (dy @ self._p["w2"].T) * self.act_grad(self.z)
        self._g["w1"] = self.x.reshape(-1, D).T @ dz.reshape(-1, F)
        self._g["b1"] = dz.reshape(-1, F).sum(axis=0)
        return dz @ self._p["w1"].T


@gradlab.register("ffn")
def build(cfg):
    return MLP(cfg.d_model, cfg.d_ff, getattr(cfg, "activation", "gelu"), cfg.dtype)
