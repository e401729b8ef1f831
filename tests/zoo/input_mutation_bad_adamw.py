"""Broken: AdamW written with the weight decay added into the caller's gradient
arrays in place (g += wd * p), which also makes it L2-regularised Adam."""
import numpy as np

import gradlab


class AdamW:
    def __init__(self, lr, b1, b2, eps, wd):
        self.lr, self.b1, self.b2, self.eps, self.wd = lr, b1, b2, eps, wd
        self.m, self.v, self.t = {}, {}, 0

    def step(self, params, grads):
        self.t += 1
        for k, p in params.items():
            g = grads[k]
            g += self.wd * p
            self.m[k] = self.b1 * self.m.get(k, 0) + (1 - self.b1) * g
            self.v[k] = self.b2 * self.v.get(k, 0) + (1 - self.b2) * g * g
            mh = self.m[k] / (1 - self.b1 ** self.t)
            vh = self.v[k] / (1 - self.b2 ** self.t)
            p -= self.lr * mh / (np.sqrt(vh) + self.eps)


@gradlab.register("adamw")
def build(cfg):
    return AdamW(cfg.lr, cfg.beta1, cfg.beta2, cfg.eps, cfg.weight_decay)
