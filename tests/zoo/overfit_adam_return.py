"""Broken: Adam with `return` indented into the loop: only the first parameter is ever updated."""
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
            self.m[k] = c.beta1 * self.m.get(k, 0) + (1 - c.beta1) * g
            self.v[k] = c.beta2 * self.v.get(k, 0) + (1 - c.beta2) * g * g
            m_hat = self.m[k] / (1 - c.beta1 ** self.t)
            v_hat = self.v[k] / (1 - c.beta2 ** self.t)
            p -= c.lr * m_hat / (np.sqrt(v_hat) + c.eps)
            return


@gradlab.register("adam")
def build(cfg):
    return Adam(cfg)
