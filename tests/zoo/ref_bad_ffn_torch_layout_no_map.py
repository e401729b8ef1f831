"""A correct FFN with PyTorch's weight layout, (out_features, in_features) used as x @ W.T, registered
without a param_map: its names say nothing, so the reference weights are paired by shape, and the shapes
pair each layer with the other's weight. The reference check must say that, not only blame forward."""
import numpy as np

import gradlab


class FFN:
    def __init__(self, d_model, d_ff, rng, dtype):
        self.params = {"first": rng.standard_normal((d_ff, d_model)).astype(dtype) * 0.1,
                       "first_b": np.zeros(d_ff, dtype),
                       "second": rng.standard_normal((d_model, d_ff)).astype(dtype) * 0.1,
                       "second_b": np.zeros(d_model, dtype)}
        self.grads = {}

    def forward(self, x):
        p = self.params
        self.x, self.h = x, x @ p["first"].T + p["first_b"]
        self.t = np.tanh(np.sqrt(2 / np.pi) * (self.h + 0.044715 * self.h ** 3))
        self.a = 0.5 * self.h * (1 + self.t)
        return self.a @ p["second"].T + p["second_b"]

    def backward(self, dy):
        p, D, F = self.params, self.x.shape[-1], self.h.shape[-1]
        self.grads["second"] = dy.reshape(-1, D).T @ self.a.reshape(-1, F)
        self.grads["second_b"] = dy.reshape(-1, D).sum(0)
        da = dy @ p["second"]
        dt = np.sqrt(2 / np.pi) * (1 + 3 * 0.044715 * self.h ** 2) * (1 - self.t ** 2)
        dh = da * (0.5 * (1 + self.t) + 0.5 * self.h * dt)
        self.grads["first"] = dh.reshape(-1, F).T @ self.x.reshape(-1, D)
        self.grads["first_b"] = dh.reshape(-1, F).sum(0)
        return dh @ p["first"]


@gradlab.register("ffn")
def build(cfg):
    return FFN(cfg.d_model, cfg.d_ff, np.random.default_rng(cfg.seed), cfg.dtype)
