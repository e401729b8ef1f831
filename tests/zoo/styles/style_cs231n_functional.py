"""Style: CS231n's functional layers, `affine_forward(x, w, b) -> (out, cache)` and
`affine_backward(dout, cache) -> (dx, dw, db)`, wrapped in the thinnest class the
contract allows: params {'W', 'b'} and grads filled by backward. The layer is 7 wide
(neither d_model nor d_ff): its width is its own choice."""
import numpy as np

import gradlab

WIDTH = 7


def affine_forward(x, w, b):
    out = x.reshape(x.shape[0], -1) @ w + b
    cache = (x, w, b)
    return out, cache


def affine_backward(dout, cache):
    x, w, b = cache
    dx = (dout @ w.T).reshape(x.shape)
    dw = x.reshape(x.shape[0], -1).T @ dout
    db = np.sum(dout, axis=0)
    return dx, dw, db


class Affine:
    """The class a student writes around the functions: (B, T, D) rows flattened to (N, D)."""

    def __init__(self, d_in, d_out, dtype="float64", seed=0):
        rng = np.random.default_rng(seed)
        self.params = {"W": (rng.standard_normal((d_in, d_out)) * np.sqrt(2.0 / d_in)).astype(dtype),
                       "b": np.zeros(d_out, dtype)}
        self.grads = {}

    def forward(self, x):
        lead = x.shape[:-1]
        out, self.cache = affine_forward(x.reshape(-1, x.shape[-1]), self.params["W"], self.params["b"])
        return out.reshape(*lead, -1)

    def backward(self, dout):
        x = self.cache[0]
        dx, self.grads["W"], self.grads["b"] = self.backward_rows(dout.reshape(-1, dout.shape[-1]))
        return dx.reshape(*dout.shape[:-1], x.shape[-1])

    def backward_rows(self, dout):
        return affine_backward(dout, self.cache)


@gradlab.register("linear")
def build(cfg):
    return Affine(cfg.d_model, WIDTH, cfg.dtype, cfg.seed)
