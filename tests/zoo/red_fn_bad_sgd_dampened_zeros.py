"""Broken (one bug): SGD with a damped momentum buffer started at zeros
(v = mu * v + (1 - mu) * g, an exponential moving average); PyTorch adds g undamped."""
import numpy as np

import gradlab


class SGD:
    def __init__(self, lr, momentum):
        self.lr, self.momentum = lr, momentum
        self.velocity = {}

    def step(self, params, grads):
        for name, p in params.items():
            v = self.velocity.setdefault(name, np.zeros_like(p))
            v *= self.momentum
            v += (1 - self.momentum) * grads[name]                 # BUG: damped
            p -= self.lr * v


@gradlab.register("sgd")
def build(cfg):
    return SGD(cfg.lr, cfg.momentum)
