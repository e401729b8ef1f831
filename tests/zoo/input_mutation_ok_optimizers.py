"""Correct sgd (momentum), adam and adamw with PyTorch's semantics, written
without touching the caller's gradient arrays."""
import numpy as np

import gradlab


class SGD:
    def __init__(self, cfg):
        self.cfg, self.buf = cfg, {}

    def step(self, params, grads):
        c = self.cfg
        for k, p in params.items():
            g = grads[k] + c.weight_decay * p if c.weight_decay else grads[k]
            self.buf[k] = g.copy() if k not in self.buf else c.momentum * self.buf[k] + g
            p -= c.lr * (self.buf[k] if c.momentum else g)


class Adam:
    decoupled = False

    def __init__(self, cfg):
        self.cfg, self.m, self.v, self.t = cfg, {}, {}, 0

    def step(self, params, grads):
        c = self.cfg
        self.t += 1
        for k, p in params.items():
            g = grads[k]
            if c.weight_decay and self.decoupled:
                p *= 1 - c.lr * c.weight_decay
            elif c.weight_decay:
                g = g + c.weight_decay * p
            self.m[k] = c.beta1 * self.m.get(k, 0.0) + (1 - c.beta1) * g
            self.v[k] = c.beta2 * self.v.get(k, 0.0) + (1 - c.beta2) * g * g
            mh = self.m[k] / (1 - c.beta1 ** self.t)
            vh = self.v[k] / (1 - c.beta2 ** self.t)
            p -= c.lr * mh / (np.sqrt(vh) + c.eps)


class AdamW(Adam):
    decoupled = True


gradlab.register("sgd")(SGD)
gradlab.register("adam")(Adam)
gradlab.register("adamw")(AdamW)
