"""Correct: a torch-like SGD with the full option set (dampening=0,
nesterov=False by default), buffers keyed by name, coupled weight decay."""
import numpy as np

import gradlab


class SGD:
    def __init__(self, lr, momentum=0.0, dampening=0.0, weight_decay=0.0, nesterov=False):
        self.lr, self.momentum, self.dampening = lr, momentum, dampening
        self.weight_decay, self.nesterov = weight_decay, nesterov
        self.momentum_buffer = {}

    def step(self, params, grads):
        for name, p in params.items():
            d_p = grads[name]
            if self.weight_decay != 0:
                d_p = d_p + self.weight_decay * p
            if self.momentum != 0:
                buf = self.momentum_buffer.get(name)
                if buf is None:
                    buf = self.momentum_buffer[name] = np.array(d_p, copy=True)
                else:
                    buf *= self.momentum
                    buf += (1 - self.dampening) * d_p
                d_p = d_p + self.momentum * buf if self.nesterov else buf
            p += -self.lr * d_p


@gradlab.register("sgd")
def build(cfg):
    return SGD(cfg.lr, momentum=cfg.momentum, weight_decay=cfg.weight_decay)
