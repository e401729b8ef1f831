"""Style: "Deep Learning from Scratch" layers. Each layer keeps `self.params = [W, b]`
and `self.grads = [zeros_like(W), zeros_like(b)]`, and backward writes into the
gradient buffers in place (`self.grads[0][...] = dW`). A network gathers its layers'
lists into its own (`self.params += layer.params`). The linear maps d_model to
d_model (its own choice of width); the FFN is two of them around a GELU layer."""
import numpy as np

import gradlab


class Affine:
    def __init__(self, W, b):
        self.params = [W, b]
        self.grads = [np.zeros_like(W), np.zeros_like(b)]
        self.x = None

    def forward(self, x):
        W, b = self.params
        self.x = x
        return np.dot(x, W) + b

    def backward(self, dout):
        W, b = self.params
        x2 = self.x.reshape(-1, W.shape[0])
        d2 = dout.reshape(-1, W.shape[1])
        self.grads[0][...] = self.weight_grad(x2, d2)
        self.grads[1][...] = np.sum(d2, axis=0)
        return np.dot(dout, W.T)

    def weight_grad(self, x2, d2):
        return np.dot(x2.T, d2)


class GELU:
    def __init__(self):
        self.params, self.grads = [], []

    def forward(self, x):
        c = np.sqrt(2.0 / np.pi)
        self.x = x
        self.t = np.tanh(c * (x + 0.044715 * x ** 3))
        return 0.5 * x * (1.0 + self.t)

    def backward(self, dout):
        c = np.sqrt(2.0 / np.pi)
        x, t = self.x, self.t
        return dout * (0.5 * (1.0 + t) + 0.5 * x * (1.0 - t ** 2) * c * (1.0 + 3 * 0.044715 * x ** 2))


class FeedForward:
    def __init__(self, d_model, d_ff, dtype):
        rng = np.random.default_rng(0)
        W1 = (0.1 * rng.standard_normal((d_model, d_ff))).astype(dtype)
        W2 = (0.1 * rng.standard_normal((d_ff, d_model))).astype(dtype)
        self.layers = [Affine(W1, np.zeros(d_ff, dtype)), GELU(), Affine(W2, np.zeros(d_model, dtype))]
        self.params, self.grads = [], []
        for layer in self.layers:
            self.params += layer.params
            self.grads += layer.grads

    def forward(self, x):
        for layer in self.layers:
            x = layer.forward(x)
        return x

    def backward(self, dout):
        for layer in reversed(self.layers):
            dout = layer.backward(dout)
        return dout


@gradlab.register("linear")
def build_linear(cfg):
    rng = np.random.default_rng(cfg.seed)
    W = (rng.standard_normal((cfg.d_model, cfg.d_model)) / np.sqrt(cfg.d_model)).astype(cfg.dtype)
    return Affine(W, np.zeros(cfg.d_model, cfg.dtype))


@gradlab.register("ffn")
def build_ffn(cfg):
    return FeedForward(cfg.d_model, cfg.d_ff, cfg.dtype)
