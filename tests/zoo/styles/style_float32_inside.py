"""Style: a library that computes in float32 whatever it is given (GPU habits), keeping float64
parameters when cfg.dtype is float64, and casting its results back to the caller's dtype. Its
gradients are float32 numbers stored in float64 arrays: judged as float32 (CONTRACT §6)."""
import numpy as np

import gradlab


def gelu32(h):
    c = np.float32(np.sqrt(2 / np.pi))
    t = np.tanh(c * (h + np.float32(0.044715) * h ** 3))
    return np.float32(0.5) * h * (1 + t), t


class FFN:
    def __init__(self, d_model, d_ff, dtype, rng):
        self.params = {"W1": (rng.standard_normal((d_model, d_ff)) / np.sqrt(d_model)).astype(dtype),
                       "b1": np.zeros(d_ff, dtype),
                       "W2": (rng.standard_normal((d_ff, d_model)) / np.sqrt(d_ff)).astype(dtype),
                       "b2": np.zeros(d_model, dtype)}
        self.grads = {k: np.zeros_like(v) for k, v in self.params.items()}

    def forward(self, x):
        self.dtype = x.dtype
        p = {k: v.astype(np.float32) for k, v in self.params.items()}
        self.x = x.astype(np.float32)
        self.h = self.x @ p["W1"] + p["b1"]
        self.a, self.t = gelu32(self.h)
        return (self.a @ p["W2"] + p["b2"]).astype(self.dtype)

    def backward(self, dy):
        dy = dy.astype(np.float32)
        p = {k: v.astype(np.float32) for k, v in self.params.items()}
        self.grads["W2"][...] = self.token_sum(self.a, dy)
        self.grads["b2"][...] = dy.sum(axis=(0, 1))
        da = dy @ p["W2"].T
        dh = da * self.gelu_grad()
        self.grads["W1"][...] = self.token_sum(self.x, dh)
        self.grads["b1"][...] = dh.sum(axis=(0, 1))
        return (dh @ p["W1"].T).astype(self.dtype)

    @staticmethod
    def token_sum(inputs, grads):
        return np.einsum("bti,btj->ij", inputs, grads)

    def gelu_grad(self):
        c, h, t = np.float32(np.sqrt(2 / np.pi)), self.h, self.t
        return np.float32(0.5) * (1 + t) + np.float32(0.5) * h * (1 - t ** 2) * c * (1 + np.float32(3 * 0.044715) * h ** 2)


@gradlab.register("ffn")
def build(cfg):
    return FFN(cfg.d_model, cfg.d_ff, cfg.np_dtype, np.random.default_rng(cfg.seed))
