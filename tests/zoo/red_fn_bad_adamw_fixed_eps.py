"""Broken (one bug): an AdamW whose eps is a default argument, (1e-8), never read from cfg."""
import numpy as np

import gradlab


class AdamW:
    def __init__(self, cfg, eps=1e-8):
        self.cfg, self.eps = cfg, eps
        self.t, self.state = 0, {}

    def step(self, params, grads):
        c = self.cfg
        self.t += 1
        for name, p in params.items():
            m, v = self.state.setdefault(name, (np.zeros_like(p), np.zeros_like(p)))
            p *= 1 - c.lr * c.weight_decay
            m[...] = c.beta1 * m + (1 - c.beta1) * grads[name]
            v[...] = c.beta2 * v + (1 - c.beta2) * grads[name] ** 2
            step = c.lr / (1 - c.beta1 ** self.t)
            p -= step * m / (np.sqrt(v / (1 - c.beta2 ** self.t)) + self.eps)


@gradlab.register("adamw")
def build(cfg):
    return AdamW(cfg)                                                  # BUG: eps never comes from cfg
