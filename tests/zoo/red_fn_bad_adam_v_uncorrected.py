"""Broken (one bug): Adam that bias-corrects m but not v (state as tuples in a list)."""
import numpy as np

import gradlab


class Adam:
    def __init__(self, lr, betas, eps):
        self.lr, self.betas, self.eps = lr, betas, eps
        self.state = None
        self.n = 0

    def step(self, params, grads):
        names = sorted(params)
        if self.state is None:
            self.state = [[np.zeros_like(params[k]), np.zeros_like(params[k])] for k in names]
        self.n += 1
        b1, b2 = self.betas
        for (m, v), k in zip(self.state, names):
            g = grads[k]
            m[...] = b1 * m + (1 - b1) * g
            v[...] = b2 * v + (1 - b2) * g * g
            m_hat = m / (1 - b1 ** self.n)
            params[k] -= self.lr * m_hat / (np.sqrt(v) + self.eps)   # BUG: v is not bias-corrected


@gradlab.register("adam")
def build(cfg):
    return Adam(cfg.lr, (cfg.beta1, cfg.beta2), cfg.eps)
