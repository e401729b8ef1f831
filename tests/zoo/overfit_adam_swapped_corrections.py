"""Broken: Adam with the two bias corrections swapped (m by 1 - beta2**t, v by 1 - beta1**t): the first
steps are ~30x too large and the loss climbs."""
import numpy as np

import gradlab


class Adam:
    def __init__(self, cfg):
        self.cfg, self.t, self.m, self.v = cfg, 0, {}, {}

    def step(self, params, grads):
        c = self.cfg
        self.t += 1
        for k, p in params.items():
            g = grads[k] + c.weight_decay * p
            self.m[k] = c.beta1 * self.m.get(k, 0) + (1 - c.beta1) * g
            self.v[k] = c.beta2 * self.v.get(k, 0) + (1 - c.beta2) * g * g
            m_hat = self.m[k] / (1 - c.beta2 ** self.t)                # BUG: beta1
            v_hat = self.v[k] / (1 - c.beta1 ** self.t)                # BUG: beta2
            p -= c.lr * m_hat / (np.sqrt(v_hat) + c.eps)


@gradlab.register("adam")
def build(cfg):
    return Adam(cfg)
