"""Broken (one bug): the momentum is read from cfg.beta1 (both are 0.9 by default, so a run at the
defaults cannot tell)."""
import numpy as np

import gradlab


class SGD:
    def __init__(self, lr, momentum, weight_decay):
        self.lr, self.momentum, self.wd = lr, momentum, weight_decay
        self.velocity = {}

    def step(self, params, grads):
        for name, p in params.items():
            g = grads[name] + self.wd * p
            v = self.velocity.get(name)
            v = g if v is None else self.momentum * v + g
            self.velocity[name] = v
            p -= self.lr * v


@gradlab.register("sgd")
def build(cfg):
    return SGD(cfg.lr, cfg.beta1, cfg.weight_decay)                                 # BUG: cfg.momentum
