"""Correct: picoGPT's layout. params is a tree, {"c_fc": {"w", "b"}, "c_proj": {"w", "b"}}, and grads
mirrors it; the layers are functions of (x, params) with a cache, GELU's tanh form."""
import numpy as np

import gradlab


def linear(x, p):
    return x @ p["w"] + p["b"]


def linear_backward(x, p, g):
    flat = g.reshape(-1, g.shape[-1])
    return g @ p["w"].T, {"w": x.reshape(-1, x.shape[-1]).T @ flat, "b": flat.sum(axis=0)}


def gelu(x):
    return 0.5 * x * (1 + np.tanh(np.sqrt(2 / np.pi) * (x + 0.044715 * x ** 3)))


def gelu_grad(x):
    u = np.sqrt(2 / np.pi) * (x + 0.044715 * x ** 3)
    t = np.tanh(u)
    return 0.5 * (1 + t) + 0.5 * x * (1 - t * t) * np.sqrt(2 / np.pi) * (1 + 3 * 0.044715 * x * x)


class TreeFFN:
    def __init__(self, d, d_ff, dtype, seed):
        rng = np.random.default_rng(seed)
        self.params = {"c_fc": {"w": (rng.standard_normal((d, d_ff)) / np.sqrt(d)).astype(dtype),
                                "b": np.zeros(d_ff, dtype)},
                       "c_proj": {"w": (rng.standard_normal((d_ff, d)) / np.sqrt(d_ff)).astype(dtype),
                                  "b": np.zeros(d, dtype)}}
        self.grads = {}

    def forward(self, x):
        self.x = x
        self.h = linear(x, self.params["c_fc"])
        self.a = gelu(self.h)
        return linear(self.a, self.params["c_proj"])

    def backward(self, g):
        da, proj = linear_backward(self.a, self.params["c_proj"], g)
        dx, fc = linear_backward(self.x, self.params["c_fc"], self.activation_backward(da))
        self.grads = {"c_fc": fc, "c_proj": proj}
        return dx

    def activation_backward(self, da):
        return da * gelu_grad(self.h)


NAMES = {"c_fc.w": "w1", "c_fc.b": "b1", "c_proj.w": "w2", "c_proj.b": "b2"}


@gradlab.register("ffn", param_map=NAMES)
def build(cfg):
    return TreeFFN(cfg.d_model, cfg.d_ff, cfg.dtype, cfg.seed)
