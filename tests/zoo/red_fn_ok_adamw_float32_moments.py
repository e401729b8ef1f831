"""Correct: AdamW with float32 moments, the Adam step in float32 (Python-float scalars only), and the
decoupled decay theta *= 1 - lr * wd applied to the caller's float64 parameters in float64, as the
contract asks: each step's change is a float64 number, its error float32's (CONTRACT §6)."""
import math

import numpy as np

import gradlab


class AdamW:
    def __init__(self, cfg):
        self.cfg, self.state, self.t = cfg, {}, 0

    def step(self, params, grads):
        c = self.cfg
        self.t += 1
        bc1, bc2 = 1.0 - c.beta1 ** self.t, 1.0 - c.beta2 ** self.t
        for name, p in params.items():
            g = grads[name].astype(np.float32)
            m, v = self.state.setdefault(name, (np.zeros(p.shape, np.float32), np.zeros(p.shape, np.float32)))
            m *= c.beta1
            m += (1.0 - c.beta1) * g
            v *= c.beta2
            v += (1.0 - c.beta2) * g * g
            p *= 1.0 - c.lr * c.weight_decay
            p -= (c.lr / bc1) * m / (np.sqrt(v) / math.sqrt(bc2) + c.eps)


@gradlab.register("adamw")
def build(cfg):
    return AdamW(cfg)
