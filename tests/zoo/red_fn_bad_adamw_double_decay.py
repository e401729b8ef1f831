"""Broken (one bug): AdamW that decays twice: p *= 1 - lr*wd, and the update
also carries + wd * p (the decay term folded into the step as well)."""
import numpy as np

import gradlab


class AdamW:
    def __init__(self, cfg):
        self.c = cfg
        self.t = 0
        self.m, self.v = {}, {}

    def step(self, params, grads):
        c = self.c
        self.t += 1
        for k, p in params.items():
            g = grads[k]
            m = self.m[k] = c.beta1 * self.m.get(k, 0) + (1 - c.beta1) * g
            v = self.v[k] = c.beta2 * self.v.get(k, 0) + (1 - c.beta2) * g * g
            m_hat, v_hat = m / (1 - c.beta1 ** self.t), v / (1 - c.beta2 ** self.t)
            p *= 1 - c.lr * c.weight_decay
            p -= c.lr * (m_hat / (np.sqrt(v_hat) + c.eps) + c.weight_decay * p)   # BUG: decayed a second time


@gradlab.register("adamw")
def build(cfg):
    return AdamW(cfg)
