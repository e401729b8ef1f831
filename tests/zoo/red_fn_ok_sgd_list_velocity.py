"""Correct: SGD whose velocities live in a list indexed by the parameter's
position, zero-initialised (v = mu * 0 + g on the first step equals torch's
buf = g), updates with np.subtract(..., out=p)."""
import numpy as np

import gradlab


class MomentumSGD:
    def __init__(self, cfg):
        self.lr = cfg.lr
        self.mu = cfg.momentum
        self.wd = cfg.weight_decay
        self.velocities = []

    def step(self, params, grads):
        keys = list(params.keys())
        if not self.velocities:
            self.velocities = [np.zeros_like(params[k]) for k in keys]
        for i, k in enumerate(keys):
            g = grads[k] + self.wd * params[k]
            self.velocities[i] = self.mu * self.velocities[i] + g
            np.subtract(params[k], self.lr * self.velocities[i], out=params[k])


@gradlab.register("sgd")
def build(cfg):
    return MomentumSGD(cfg)
