"""Broken (one bug): AdamW that decays the weights after the Adam step
(state keyed by id(param))."""
import numpy as np

import gradlab


class AdamW:
    def __init__(self, cfg):
        self.lr, self.b1, self.b2, self.eps, self.wd = cfg.lr, cfg.beta1, cfg.beta2, cfg.eps, cfg.weight_decay
        self.step_count = 0
        self.state = {}

    def step(self, params, grads):
        self.step_count += 1
        t = self.step_count
        for name, p in params.items():
            st = self.state.setdefault(id(p), [np.zeros_like(p), np.zeros_like(p)])
            g = grads[name]
            st[0] = self.b1 * st[0] + (1 - self.b1) * g
            st[1] = self.b2 * st[1] + (1 - self.b2) * g * g
            update = (st[0] / (1 - self.b1 ** t)) / (np.sqrt(st[1] / (1 - self.b2 ** t)) + self.eps)
            p -= self.lr * update
            p *= 1 - self.lr * self.wd                                 # BUG: decay after the update


gradlab.register("adamw")(AdamW)
