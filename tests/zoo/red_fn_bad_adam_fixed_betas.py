"""Broken (one bug): the betas are written into the class, (0.9, 0.999), not read from cfg."""
import numpy as np

import gradlab


class Adam:
    def __init__(self, lr, eps, weight_decay, betas=(0.9, 0.999)):
        self.lr, self.eps, self.wd = lr, eps, weight_decay
        self.b1, self.b2 = betas
        self.t, self.m, self.v = 0, {}, {}

    def step(self, params, grads):
        self.t += 1
        for k, p in params.items():
            g = grads[k] + self.wd * p
            self.m[k] = self.b1 * self.m.get(k, 0.0) + (1 - self.b1) * g
            self.v[k] = self.b2 * self.v.get(k, 0.0) + (1 - self.b2) * g * g
            m_hat = self.m[k] / (1 - self.b1 ** self.t)
            v_hat = self.v[k] / (1 - self.b2 ** self.t)
            p -= self.lr * m_hat / (np.sqrt(v_hat) + self.eps)


@gradlab.register("adam")
def build(cfg):
    return Adam(cfg.lr, cfg.eps, cfg.weight_decay)                  # BUG: betas never come from cfg
