"""Correct: Adam with float32 moment buffers whose update divides by np.sqrt(1 - beta2 ** t), a float64
NumPy scalar: NumPy promotes the float32 update to float64, so no step changes the parameters by a float32
number, yet every step is float32-accurate (CONTRACT §6: float32 moments are judged as float32)."""
import numpy as np

import gradlab


class Adam:
    def __init__(self, cfg):
        self.lr, self.b1, self.b2, self.eps, self.wd = cfg.lr, cfg.beta1, cfg.beta2, cfg.eps, cfg.weight_decay
        self.m, self.v, self.t = {}, {}, 0

    def step(self, params, grads):
        self.t += 1
        correction1 = 1 - self.b1 ** self.t
        correction2 = np.sqrt(1 - self.b2 ** self.t)       # np.float64
        for name, p in params.items():
            g = grads[name] + self.wd * p if self.wd else grads[name]
            m = self.m.setdefault(name, np.zeros(p.shape, np.float32))
            v = self.v.setdefault(name, np.zeros(p.shape, np.float32))
            m[...] = self.b1 * m + (1 - self.b1) * g
            v[...] = self.b2 * v + (1 - self.b2) * g * g
            p -= (self.lr / correction1) * m / (np.sqrt(v) / correction2 + self.eps)


@gradlab.register("adam")
def build(cfg):
    return Adam(cfg)
