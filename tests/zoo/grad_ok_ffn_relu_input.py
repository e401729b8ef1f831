"""Correct: a bias-free ReLU FFN that also applies ReLU to its input first
(relu(x) @ w1 -> relu -> @ w2). A forward input with exact zeros puts those
pre-activations exactly on the kink at 0, for every value of the weights."""
import numpy as np

import gradlab


class PreReluFFN:
    def __init__(self, d, f, dtype="float64"):
        rng = np.random.default_rng(0)
        self.params = {"w1": (rng.standard_normal((d, f)) / np.sqrt(d)).astype(dtype),
                       "w2": (rng.standard_normal((f, d)) / np.sqrt(f)).astype(dtype)}
        self.grads = {}

    def forward(self, x):
        p = self.params
        self.x = x
        self.r = np.maximum(x, 0)
        self.h = self.r @ p["w1"]
        self.a = np.maximum(self.h, 0)
        return self.a @ p["w2"]

    def backward(self, g):
        p = self.params
        d, f = p["w1"].shape
        self.grads["w2"] = self.a.reshape(-1, f).T @ g.reshape(-1, d)
        dh = (g @ p["w2"].T) * (self.h > 0)
        self.grads["w1"] = self.r.reshape(-1, d).T @ dh.reshape(-1, f)
        return (dh @ p["w1"].T) * (self.x > 0)


@gradlab.register("ffn")
def build(cfg):
    return PreReluFFN(cfg.d_model, cfg.d_ff, cfg.dtype)
