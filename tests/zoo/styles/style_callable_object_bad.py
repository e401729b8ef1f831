"""Broken twins: eps inside the square root of Adam's denominator; the softmax
subtracts no maximum."""
import numpy as np

import gradlab
from style_callable_object import Adam, Softmax


class EpsInside(Adam):
    def update(self, i):
        m_hat = self.m[i] / (1 - self.b1 ** self.t)
        v_hat = self.v[i] / (1 - self.b2 ** self.t)
        return self.lr * m_hat / np.sqrt(v_hat + self.eps)      # BUG: eps belongs outside the sqrt


class NoMax(Softmax):
    @staticmethod
    def row_max(x, axis):
        return 0.0                                              # BUG: exp overflows for large x


gradlab.register("softmax")(NoMax())


@gradlab.register("adam")
def build(cfg):
    return EpsInside(cfg.lr, (cfg.beta1, cfg.beta2), cfg.eps, cfg.weight_decay)
