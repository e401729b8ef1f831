"""Correct: Adam that computes in float32 whatever it is given (its moments and the update), writing
float32 numbers into the caller's float64 parameters (CONTRACT §6: judged as float32)."""
import numpy as np

import gradlab


class Adam:
    def __init__(self, cfg):
        f = np.float32
        self.lr, self.b1, self.b2, self.eps, self.wd = f(cfg.lr), f(cfg.beta1), f(cfg.beta2), f(cfg.eps), f(cfg.weight_decay)
        self.t, self.m, self.v = 0, {}, {}

    def step(self, params, grads):
        self.t += 1
        for k, p in params.items():
            p32 = p.astype(np.float32)
            g = grads[k].astype(np.float32) + self.wd * p32
            self.m[k] = self.b1 * self.m.get(k, np.float32(0)) + (1 - self.b1) * g
            self.v[k] = self.b2 * self.v.get(k, np.float32(0)) + (1 - self.b2) * g * g
            m_hat = self.m[k] / (1 - self.b1 ** self.t)
            v_hat = self.v[k] / (1 - self.b2 ** self.t)
            p[...] = p32 - self.lr * self.update(m_hat, v_hat)

    def update(self, m_hat, v_hat):
        return m_hat / (np.sqrt(v_hat) + self.eps)


@gradlab.register("adam")
def build(cfg):
    return Adam(cfg)
