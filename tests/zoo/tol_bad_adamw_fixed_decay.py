"""Broken: AdamW with its decay hard-coded to 0.01 (cfg.weight_decay never read): right at the kind's
default, wrong when no decay is asked for."""
import numpy as np

import gradlab


class AdamW:
    def __init__(self, cfg):
        self.lr, self.b1, self.b2, self.eps = cfg.lr, cfg.beta1, cfg.beta2, cfg.eps
        self.t, self.m, self.v = 0, {}, {}

    def step(self, params, grads):
        self.t += 1
        for k, p in params.items():
            g = grads[k]
            self.m[k] = self.b1 * self.m.get(k, 0) + (1 - self.b1) * g
            self.v[k] = self.b2 * self.v.get(k, 0) + (1 - self.b2) * g * g
            p *= 1 - self.lr * 0.01                                 # BUG: not cfg.weight_decay
            p -= self.lr * (self.m[k] / (1 - self.b1 ** self.t)) / (np.sqrt(self.v[k] / (1 - self.b2 ** self.t)) + self.eps)


@gradlab.register("adamw")
def build(cfg):
    return AdamW(cfg)
