"""Broken (one bug): Adam whose moment dicts are class attributes, so every
instance shares them (a second optimizer continues where the first stopped)."""
import numpy as np

import gradlab


class Adam:
    m = {}                                                   # BUG: shared by every instance
    v = {}

    def __init__(self, lr, beta1, beta2, eps):
        self.lr, self.beta1, self.beta2, self.eps = lr, beta1, beta2, eps
        self.t = 0

    def step(self, params, grads):
        self.t += 1
        for name, p in params.items():
            g = grads[name]
            self.m[name] = self.beta1 * self.m.get(name, 0) + (1 - self.beta1) * g
            self.v[name] = self.beta2 * self.v.get(name, 0) + (1 - self.beta2) * g * g
            m_hat = self.m[name] / (1 - self.beta1 ** self.t)
            v_hat = self.v[name] / (1 - self.beta2 ** self.t)
            p -= self.lr * m_hat / (np.sqrt(v_hat) + self.eps)


@gradlab.register("adam")
def build(cfg):
    return Adam(cfg.lr, cfg.beta1, cfg.beta2, cfg.eps)
