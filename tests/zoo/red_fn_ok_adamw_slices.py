"""Correct: AdamW with per-parameter state objects and slice assignment
(p[...] = ...), decay written as p -= lr * wd * p (same as p *= 1 - lr * wd)."""
import numpy as np

import gradlab


class _Slot:
    def __init__(self, like):
        self.m = np.zeros_like(like)
        self.v = np.zeros_like(like)


class AdamW:
    def __init__(self, cfg):
        self.cfg = cfg
        self.slots = {}
        self.t = 0

    def step(self, params, grads):
        c = self.cfg
        self.t += 1
        c1 = 1.0 - c.beta1 ** self.t
        c2 = 1.0 - c.beta2 ** self.t
        for key, p in params.items():
            s = self.slots.setdefault(key, _Slot(p))
            g = grads[key]
            p -= c.lr * c.weight_decay * p
            s.m = c.beta1 * s.m + (1.0 - c.beta1) * g
            s.v = c.beta2 * s.v + (1.0 - c.beta2) * np.square(g)
            p[...] = p - c.lr * (s.m / c1) / (np.sqrt(s.v / c2) + c.eps)


@gradlab.register("adamw")
def make(cfg):
    return AdamW(cfg)
