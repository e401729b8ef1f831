"""Correct (CS231n style): affine_forward/affine_backward helpers with a cache tuple,
params/grads dicts, inputs of any leading shape."""
import numpy as np

import gradlab


def affine_forward(x, w, b):
    out = x.reshape(-1, w.shape[0]).dot(w) + b
    cache = (x, w, b)
    return out.reshape(*x.shape[:-1], w.shape[1]), cache


def affine_backward(dout, cache):
    x, w, b = cache
    x2 = x.reshape(-1, w.shape[0])
    d2 = dout.reshape(-1, w.shape[1])
    dx = d2.dot(w.T).reshape(x.shape)
    dw = x2.T.dot(d2)
    db = np.sum(d2, axis=0)
    return dx, dw, db


class Affine(object):
    def __init__(self, din, dout, weight_scale=1e-2, dtype=np.float64):
        self.params = {}
        self.params['weight'] = (weight_scale * np.random.randn(din, dout)).astype(dtype)
        self.params['bias'] = np.zeros(dout, dtype=dtype)
        self.grads = {}
        self.cache = None

    def forward(self, x):
        out, self.cache = affine_forward(x, self.params['weight'], self.params['bias'])
        return out

    def backward(self, dout):
        dx, self.grads['weight'], self.grads['bias'] = affine_backward(dout, self.cache)
        return dx


@gradlab.register("linear")
def build(cfg):
    return Affine(cfg.d_model, cfg.d_ff, dtype=cfg.dtype)
