"""Correct: a tiny autograd's style. Parameters are an ndarray subclass that carries its own .grad
(None until backward), kept as plain attributes; the module does its arithmetic on them directly."""
import numpy as np

import gradlab


class Tensor(np.ndarray):
    """An array with a .grad slot; views and results of arithmetic inherit the attribute."""
    def __new__(cls, data):
        out = np.asarray(data).view(cls)
        out.grad = None
        return out

    def __array_finalize__(self, obj):
        self.grad = getattr(obj, "grad", None)


class LayerNorm:
    def __init__(self, d, eps, dtype):
        self.eps = eps
        self.gamma = Tensor(np.ones(d, dtype=dtype))
        self.beta = Tensor(np.zeros(d, dtype=dtype))

    def forward(self, x):
        mu = x.mean(axis=-1, keepdims=True)
        self.rstd = 1.0 / np.sqrt(((x - mu) ** 2).mean(axis=-1, keepdims=True) + self.eps)
        self.xhat = (x - mu) * self.rstd
        return np.asarray(self.xhat * self.gamma + self.beta)

    def backward(self, dy):
        axes = tuple(range(dy.ndim - 1))
        self.gamma.grad = np.asarray((dy * self.xhat).sum(axis=axes))
        self.beta.grad = np.asarray(dy.sum(axis=axes))
        return self.input_grad(np.asarray(dy * self.gamma))

    def input_grad(self, dxhat):
        return self.rstd * (dxhat - dxhat.mean(axis=-1, keepdims=True)
                            - self.xhat * (dxhat * self.xhat).mean(axis=-1, keepdims=True))


@gradlab.register("layernorm")
def build(cfg):
    return LayerNorm(cfg.d_model, cfg.eps, cfg.dtype)
