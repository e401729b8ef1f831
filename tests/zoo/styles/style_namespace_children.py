"""Correct: layers made by factory functions that return types.SimpleNamespace objects (forward,
backward, params, grads as fields, state in closures); the FFN holds two of them as attributes."""
from types import SimpleNamespace

import numpy as np

import gradlab


def dense(d_in, d_out, rng, dtype):
    p = {"W": (rng.standard_normal((d_in, d_out)) / np.sqrt(d_in)).astype(dtype), "b": np.zeros(d_out, dtype)}
    g, seen = {}, {}

    def forward(x):
        seen["x"] = x
        return x @ p["W"] + p["b"]

    def backward(dy):
        x = seen["x"]
        g["W"] = x.reshape(-1, x.shape[-1]).T @ dy.reshape(-1, dy.shape[-1])
        g["b"] = bias_grad(dy)
        return dy @ p["W"].T

    return SimpleNamespace(forward=forward, backward=backward, params=p, grads=g)


def bias_grad(dy):
    return dy.reshape(-1, dy.shape[-1]).sum(axis=0)


def gelu_parts(x):
    from math import sqrt
    u = sqrt(2 / np.pi) * (x + 0.044715 * x ** 3)
    t = np.tanh(u)
    return 0.5 * x * (1 + t), 0.5 * (1 + t) + 0.5 * x * (1 - t * t) * sqrt(2 / np.pi) * (1 + 0.134145 * x * x)


class FFN:
    def __init__(self, cfg, dense_layer=dense):
        rng = np.random.default_rng(cfg.seed)
        self.up = dense_layer(cfg.d_model, cfg.d_ff, rng, cfg.dtype)
        self.down = dense_layer(cfg.d_ff, cfg.d_model, rng, cfg.dtype)

    def forward(self, x):
        a, self.slope = gelu_parts(self.up.forward(x))
        return self.down.forward(a)

    def backward(self, g):
        return self.up.backward(self.down.backward(g) * self.slope)


NAMES = {"up.W": "w1", "up.b": "b1", "down.W": "w2", "down.b": "b2"}


@gradlab.register("ffn", param_map=NAMES)
def build(cfg):
    return FFN(cfg)
