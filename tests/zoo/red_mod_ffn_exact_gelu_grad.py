"""Broken: forward uses the tanh-approximate GELU, backward the derivative of the
exact GELU  Phi(x) + x * phi(x)."""
import math

import numpy as np

import gradlab

_erf = np.vectorize(math.erf)


class FeedForward:
    def __init__(self, d_model, d_ff, dtype):
        rng = np.random.default_rng(11)
        self.w1 = (rng.standard_normal((d_model, d_ff)) * math.sqrt(2 / d_model)).astype(dtype)
        self.b1 = np.zeros(d_ff, dtype)
        self.w2 = (rng.standard_normal((d_ff, d_model)) * math.sqrt(2 / d_ff)).astype(dtype)
        self.b2 = np.zeros(d_model, dtype)

    def forward(self, x, training=False):
        self.x = x
        self.h = x @ self.w1 + self.b1
        k = math.sqrt(2 / math.pi)
        self.a = 0.5 * self.h * (1 + np.tanh(k * (self.h + 0.044715 * self.h ** 3)))
        return self.a @ self.w2 + self.b2

    def backward(self, dout):
        h = self.h
        cdf = 0.5 * (1 + _erf(h / math.sqrt(2)))
        pdf = np.exp(-0.5 * h ** 2) / math.sqrt(2 * math.pi)
        dgelu = cdf + h * pdf                   # BUG: derivative of the exact GELU, forward is tanh
        self.dw2 = np.einsum("btf,btd->fd", self.a, dout)
        self.db2 = dout.sum((0, 1))
        dh = (dout @ self.w2.T) * dgelu
        self.dw1 = np.einsum("btd,btf->df", self.x, dh)
        self.db1 = dh.sum((0, 1))
        return dh @ self.w1.T


@gradlab.register("ffn")
def build(cfg):
    return FeedForward(cfg.d_model, cfg.d_ff, cfg.dtype)
