"""Broken (one bug): "AdamW" that adds the decay to the gradient (Adam + L2)."""
import numpy as np

import gradlab


class AdamW:
    def __init__(self, lr, beta1, beta2, eps, weight_decay):
        self.hp = (lr, beta1, beta2, eps, weight_decay)
        self.t, self.m, self.v = 0, {}, {}

    def step(self, params, grads):
        lr, b1, b2, eps, wd = self.hp
        self.t += 1
        for name in params:
            p = params[name]
            g = grads[name] + wd * p                                  # BUG: coupled L2, not decoupled decay
            self.m[name] = b1 * self.m.get(name, 0.0) + (1 - b1) * g
            self.v[name] = b2 * self.v.get(name, 0.0) + (1 - b2) * g * g
            p -= lr * (self.m[name] / (1 - b1 ** self.t)) / (np.sqrt(self.v[name] / (1 - b2 ** self.t)) + eps)


@gradlab.register("adamw")
def build(cfg):
    return AdamW(cfg.lr, cfg.beta1, cfg.beta2, cfg.eps, cfg.weight_decay)
