"""Correct: a tutorial's habit of keying the gradients by their own names: params["W1"] beside
grads["dW1"] (as an attribute W1 beside dW1), the dict filled by backward."""
import numpy as np

import gradlab


class FeedForward:
    def __init__(self, d_model, d_ff, rng, dtype):
        self.params = {"W1": (rng.standard_normal((d_model, d_ff)) / np.sqrt(d_model)).astype(dtype),
                       "b1": np.zeros(d_ff, dtype), "W2": (rng.standard_normal((d_ff, d_model)) / np.sqrt(d_ff)).astype(dtype),
                       "b2": np.zeros(d_model, dtype)}
        self.grads = {}

    def forward(self, x):
        p = self.params
        self.x = x
        self.h = x @ p["W1"] + p["b1"]
        self.t = np.tanh(np.sqrt(2 / np.pi) * (self.h + 0.044715 * self.h ** 3))
        self.a = 0.5 * self.h * (1 + self.t)
        return self.a @ p["W2"] + p["b2"]

    def backward(self, dout):
        p, D, F = self.params, self.x.shape[-1], self.h.shape[-1]
        self.grads["dW2"] = self.a.reshape(-1, F).T @ dout.reshape(-1, D)
        self.grads["db2"] = dout.reshape(-1, D).sum(axis=0)
        da = dout @ p["W2"].T
        dt = np.sqrt(2 / np.pi) * (1 + 3 * 0.044715 * self.h ** 2) * (1 - self.t ** 2)
        dh = da * (0.5 * (1 + self.t) + 0.5 * self.h * dt)
        self.grads["dW1"] = self.x.reshape(-1, D).T @ dh.reshape(-1, F)
        self.grads["db1"] = self.first_bias_grad(dh)
        return dh @ p["W1"].T

    def first_bias_grad(self, dh):
        return dh.reshape(-1, dh.shape[-1]).sum(axis=0)


@gradlab.register("ffn")
def build(cfg):
    return FeedForward(cfg.d_model, cfg.d_ff, np.random.default_rng(cfg.seed), cfg.dtype)
