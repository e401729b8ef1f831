"""Broken (one bug): Adam that bias-corrects v but not m."""
import numpy as np

import gradlab


class Adam:
    def __init__(self, cfg):
        self.cfg, self.t, self.m, self.v = cfg, 0, {}, {}

    def step(self, params, grads):
        c = self.cfg
        self.t += 1
        for k, p in params.items():
            g = grads[k]
            self.m[k] = c.beta1 * self.m.get(k, np.zeros_like(p)) + (1 - c.beta1) * g
            self.v[k] = c.beta2 * self.v.get(k, np.zeros_like(p)) + (1 - c.beta2) * g * g
            v_hat = self.v[k] / (1 - c.beta2 ** self.t)
            p -= c.lr * self.m[k] / (np.sqrt(v_hat) + c.eps)          # BUG: m is not bias-corrected


gradlab.register("adam")(Adam)
