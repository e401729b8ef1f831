"""Broken (one bug): SGD that applies Nesterov's look-ahead (p -= lr * (g + mu * buf))."""
import numpy as np

import gradlab


class SGD:
    def __init__(self, cfg):
        self.lr, self.mu = cfg.lr, cfg.momentum
        self.buf = {}

    def step(self, params, grads):
        for k in params:
            g = grads[k]
            self.buf[k] = g.copy() if k not in self.buf else self.mu * self.buf[k] + g
            params[k] -= self.lr * (g + self.mu * self.buf[k])      # BUG: Nesterov by accident


@gradlab.register("sgd")
def build(cfg):
    return SGD(cfg)
