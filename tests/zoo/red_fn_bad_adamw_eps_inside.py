"""Broken (one bug): AdamW with eps inside the square root."""
import numpy as np

import gradlab


class AdamW:
    def __init__(self, lr, beta1, beta2, eps, weight_decay):
        self.lr, self.beta1, self.beta2, self.eps, self.wd = lr, beta1, beta2, eps, weight_decay
        self.t, self.m, self.v = 0, {}, {}

    def step(self, params, grads):
        self.t += 1
        for name, w in params.items():
            g = grads[name]
            if name not in self.m:
                self.m[name], self.v[name] = np.zeros_like(w), np.zeros_like(w)
            w *= 1 - self.lr * self.wd
            self.m[name] = self.beta1 * self.m[name] + (1 - self.beta1) * g
            self.v[name] = self.beta2 * self.v[name] + (1 - self.beta2) * g ** 2
            m_hat = self.m[name] / (1 - self.beta1 ** self.t)
            v_hat = self.v[name] / (1 - self.beta2 ** self.t)
            w -= self.lr * m_hat / np.sqrt(v_hat + self.eps)          # BUG: eps inside the sqrt


@gradlab.register("adamw")
def build(cfg):
    return AdamW(cfg.lr, cfg.beta1, cfg.beta2, cfg.eps, cfg.weight_decay)
