"""Style: a float32-only library (everything is cast to np.float32 whatever the
caller asks) whose Param objects keep `.value` and `.gradient` (zeroed at build),
gathered in a params dict: a GELU feed-forward network and a float32 softmax."""
import numpy as np

import gradlab

F32 = np.float32


class Param:
    def __init__(self, value):
        self.value = value.astype(F32)
        self.gradient = np.zeros_like(self.value)


class FFN:
    def __init__(self, d_model, d_ff, seed=0):
        rng = np.random.default_rng(seed)
        self.params = {"w1": Param(rng.standard_normal((d_model, d_ff)) / np.sqrt(d_model)),
                       "b1": Param(np.zeros(d_ff)),
                       "w2": Param(rng.standard_normal((d_ff, d_model)) / np.sqrt(d_ff)),
                       "b2": Param(np.zeros(d_model))}

    def forward(self, x):
        p = self.params
        x = x.astype(F32)
        h = x @ p["w1"].value + p["b1"].value
        a = self.gelu(h)
        self.cache = (x, h, a)
        return a @ p["w2"].value + p["b2"].value

    def backward(self, dout):
        p = self.params
        x, h, a = self.cache
        dout = dout.astype(F32)
        D, F = p["w1"].value.shape
        p["w2"].gradient[...] = a.reshape(-1, F).T @ dout.reshape(-1, D)
        p["b2"].gradient[...] = dout.sum(axis=(0, 1))
        dh = (dout @ p["w2"].value.T) * self.gelu_grad(h)
        p["w1"].gradient[...] = x.reshape(-1, D).T @ dh.reshape(-1, F)
        p["b1"].gradient[...] = dh.sum(axis=(0, 1))
        return dh @ p["w1"].value.T

    @staticmethod
    def gelu(h):
        c = F32(np.sqrt(2 / np.pi))
        return F32(0.5) * h * (F32(1) + np.tanh(c * (h + F32(0.044715) * h ** 3)))

    @staticmethod
    def gelu_grad(h):
        c = F32(np.sqrt(2 / np.pi))
        t = np.tanh(c * (h + F32(0.044715) * h ** 3))
        return F32(0.5) * (F32(1) + t) + F32(0.5) * h * (F32(1) - t * t) * c * (F32(1) + F32(3 * 0.044715) * h * h)


def softmax(x, axis=-1):
    x = np.asarray(x, dtype=F32)
    e = np.exp(x - x.max(axis=axis, keepdims=True))
    return e / e.sum(axis=axis, keepdims=True)


@gradlab.register("ffn")
def build(cfg):
    return FFN(cfg.d_model, cfg.d_ff, cfg.seed)


gradlab.register("softmax")(softmax)
