"""Broken: Adam whose step count lives in the module, reset by each __init__ and shared by every instance.
One optimizer at a time (each built after the last finished) moves the parameters exactly as the
reference does; two models trained side by side, stepped in turn, count each other's steps."""
import numpy as np

import gradlab

_t = 0


class Adam:
    def __init__(self, cfg):
        global _t
        _t = 0
        self.cfg, self.m, self.v = cfg, {}, {}

    def step(self, params, grads):
        global _t
        _t += 1
        c = self.cfg
        for name, p in params.items():
            g = grads[name] + c.weight_decay * p
            m = self.m[name] = c.beta1 * self.m.get(name, 0.0) + (1 - c.beta1) * g
            v = self.v[name] = c.beta2 * self.v.get(name, 0.0) + (1 - c.beta2) * g * g
            p -= c.lr * (m / (1 - c.beta1 ** _t)) / (np.sqrt(v / (1 - c.beta2 ** _t)) + c.eps)


@gradlab.register("adam")
def build(cfg):
    return Adam(cfg)
