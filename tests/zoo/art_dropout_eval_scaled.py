"""Classic (non-inverted) scaling at evaluation on top of inverted training: forward multiplies by (1-p) when
training is False, backward does not. The gradient check sees backward disagree with forward by 1/(1-p)."""
import numpy as np

import gradlab


class Dropout:
    def __init__(self, p, seed):
        self.p, self.rng = p, np.random.default_rng(seed)
        self.params, self.grads = {}, {}

    def forward(self, x, training=False):
        if not training:
            self.mask = None
            return x * (1 - self.p)
        self.mask = (self.rng.random(x.shape) >= self.p) / (1 - self.p)
        return x * self.mask

    def backward(self, g):
        return g.copy() if self.mask is None else g * self.mask


@gradlab.register("dropout")
def build(cfg):
    return Dropout(cfg.dropout, cfg.seed)
