"""Broken (one bug): Adam whose per-parameter helper advances the shared step
counter, so t counts parameters, not steps."""
import numpy as np

import gradlab


class Adam:
    def __init__(self, lr, b1, b2, eps):
        self.lr, self.b1, self.b2, self.eps = lr, b1, b2, eps
        self.t = 0
        self.moments = {}

    def _update(self, name, p, g):
        self.t += 1                                           # BUG: once per parameter
        m, v = self.moments.get(name, (0.0, 0.0))
        m = self.b1 * m + (1 - self.b1) * g
        v = self.b2 * v + (1 - self.b2) * g ** 2
        self.moments[name] = (m, v)
        mhat = m / (1 - self.b1 ** self.t)
        vhat = v / (1 - self.b2 ** self.t)
        p -= self.lr * mhat / (np.sqrt(vhat) + self.eps)

    def step(self, params, grads):
        for name in params:
            self._update(name, params[name], grads[name])


@gradlab.register("adam")
def build(cfg):
    return Adam(cfg.lr, cfg.beta1, cfg.beta2, cfg.eps)
