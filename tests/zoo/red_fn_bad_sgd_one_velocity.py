"""Broken (one bug): one velocity array for the whole model (self.velocity
instead of one per parameter)."""
import numpy as np

import gradlab


class SGD:
    def __init__(self, lr, momentum):
        self.lr, self.momentum = lr, momentum
        self.velocity = 0.0                                          # BUG: shared by all parameters

    def step(self, params, grads):
        for name in params:
            self.velocity = self.momentum * self.velocity + grads[name]
            params[name] -= self.lr * self.velocity


@gradlab.register("sgd")
def build(cfg):
    return SGD(cfg.lr, cfg.momentum)
