"""Broken (one bug under PyTorch semantics): Adam in the paper's "efficient"
form: lr_t = lr * sqrt(1 - b2^t) / (1 - b1^t), p -= lr_t * m / (sqrt(v) + eps),
i.e. eps added before v's bias correction (TensorFlow's epsilon-hat)."""
import math

import numpy as np

import gradlab


class Adam:
    def __init__(self, cfg):
        self.lr, self.b1, self.b2, self.eps = cfg.lr, cfg.beta1, cfg.beta2, cfg.eps
        self.t, self.m, self.v = 0, {}, {}

    def step(self, params, grads):
        self.t += 1
        lr_t = self.lr * math.sqrt(1 - self.b2 ** self.t) / (1 - self.b1 ** self.t)
        for k, p in params.items():
            g = grads[k]
            self.m[k] = self.b1 * self.m.get(k, 0) + (1 - self.b1) * g
            self.v[k] = self.b2 * self.v.get(k, 0) + (1 - self.b2) * g * g
            p -= lr_t * self.m[k] / (np.sqrt(self.v[k]) + self.eps)    # BUG: eps before v's bias correction


@gradlab.register("adam")
def build(cfg):
    return Adam(cfg)
