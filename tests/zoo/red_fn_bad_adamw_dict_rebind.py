"""Broken (one bug): AdamW that writes new arrays back into the dict
(params[name] = ...) instead of updating the caller's arrays in place."""
import numpy as np

import gradlab


class AdamW:
    def __init__(self, cfg):
        self.c, self.t, self.m, self.v = cfg, 0, {}, {}

    def step(self, params, grads):
        c = self.c
        self.t += 1
        for name, p in list(params.items()):
            g = grads[name]
            p = p * (1 - c.lr * c.weight_decay)
            self.m[name] = c.beta1 * self.m.get(name, 0) + (1 - c.beta1) * g
            self.v[name] = c.beta2 * self.v.get(name, 0) + (1 - c.beta2) * g * g
            mh = self.m[name] / (1 - c.beta1 ** self.t)
            vh = self.v[name] / (1 - c.beta2 ** self.t)
            params[name] = p - c.lr * mh / (np.sqrt(vh) + c.eps)          # BUG: rebinds the dict entry


@gradlab.register("adamw")
def build(cfg):
    return AdamW(cfg)
