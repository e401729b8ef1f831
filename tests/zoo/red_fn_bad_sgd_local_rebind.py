"""Broken (one bug): SGD that rebinds the loop variable (p = p - lr * v), so
the caller's arrays never change."""
import numpy as np

import gradlab


class SGD:
    def __init__(self, cfg):
        self.cfg = cfg
        self.v = {}

    def step(self, params, grads):
        for name, p in params.items():
            g = grads[name]
            self.v[name] = g if name not in self.v else self.cfg.momentum * self.v[name] + g
            p = p - self.cfg.lr * self.v[name]                       # BUG: rebinds, not in place


@gradlab.register("sgd")
def build(cfg):
    return SGD(cfg)
