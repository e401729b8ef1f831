"""Broken (one bug): Adam that advances t at the end of step(), so the first
step bias-corrects with t = 0 (division by 1 - beta**0 = 0)."""
import numpy as np

import gradlab


class Adam:
    def __init__(self, cfg):
        self.lr, self.beta1, self.beta2, self.eps = cfg.lr, cfg.beta1, cfg.beta2, cfg.eps
        self.t = 0
        self.m, self.v = {}, {}

    def step(self, params, grads):
        with np.errstate(divide="ignore", invalid="ignore"):
            for name, p in params.items():
                g = grads[name]
                self.m[name] = self.beta1 * self.m.get(name, 0) + (1 - self.beta1) * g
                self.v[name] = self.beta2 * self.v.get(name, 0) + (1 - self.beta2) * g * g
                m_hat = self.m[name] / (1 - self.beta1 ** self.t)
                v_hat = self.v[name] / (1 - self.beta2 ** self.t)
                p -= self.lr * m_hat / (np.sqrt(v_hat) + self.eps)
        self.t += 1                                                    # BUG: after the update


@gradlab.register("adam")
def build(cfg):
    return Adam(cfg)
