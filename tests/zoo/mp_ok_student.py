"""Correct, in a student's style: the articles' two functions at module level,
a scaler class with the state in plain attributes, np.isfinite over a list.
Other mp_* zoo files subclass Scaler and change one method to plant one bug."""
import numpy as np

import gradlab


def to_half_precision(params):
    return {k: v.astype(np.float16) if v.dtype == np.float32 else v for k, v in params.items()}


def to_full_precision(params):
    return {k: v.astype(np.float32) if v.dtype == np.float16 else v for k, v in params.items()}


class Scaler:
    to_half_precision = staticmethod(to_half_precision)
    to_full_precision = staticmethod(to_full_precision)

    def __init__(self, cfg):
        self.lr = cfg.lr
        self.loss_scale = cfg.loss_scale
        self.dynamic = cfg.loss_scaling == "dynamic"
        self.interval = cfg.growth_interval
        self.since_overflow = 0

    def unscale(self, half_grads):
        inv = np.float32(1.0) / np.float32(self.loss_scale)
        return {k: g.astype(np.float32) * inv for k, g in half_grads.items()}

    def overflowed(self, grads):
        return not np.all([np.isfinite(g).all() for g in grads.values()])

    def on_overflow(self):
        if self.dynamic:
            self.loss_scale = self.loss_scale / 2
            self.since_overflow = 0

    def on_success(self):
        if self.dynamic:
            self.since_overflow += 1
            if self.since_overflow >= self.interval:
                self.loss_scale = self.loss_scale * 2
                self.since_overflow = 0

    def step(self, master, half_grads):
        grads = self.unscale(half_grads)
        if self.overflowed(grads):
            self.on_overflow()
            return False
        for k in grads:
            self.update(master, k, grads[k])
        self.on_success()
        return True

    def update(self, master, k, grad):
        master[k] -= self.lr * grad


@gradlab.register("mixed_precision")
def build(cfg):
    return Scaler(cfg)
