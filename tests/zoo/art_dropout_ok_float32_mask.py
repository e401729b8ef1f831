"""Correct: inverted dropout whose scaled mask is kept in float32 (1/(1-p) rounded to float32), whatever
the input's dtype: float32 arithmetic inside, judged as float32."""
import numpy as np

import gradlab


class Dropout:
    def __init__(self, p, seed):
        self.p, self.rng, self.mask = p, np.random.default_rng(seed), None

    def forward(self, x, training=True):
        if not training or self.p == 0:
            self.mask = None
            return x
        self.mask = ((self.rng.random(x.shape) >= self.p) / (1 - self.p)).astype(np.float32)
        return x * self.mask

    def backward(self, g):
        return g if self.mask is None else g * self.mask


@gradlab.register("dropout")
def build(cfg):
    return Dropout(cfg.dropout, cfg.seed)
