"""Inverted dropout."""
import numpy as np

import gradlab


class Dropout:
    """forward(x, training): while training, zero each entry with probability p and scale the rest by
    1/(1-p), so the expectation is x; keep the mask for backward. Not training: the identity."""

    def __init__(self, p=0.1, seed=0):
        assert 0 <= p < 1, f"p={p} must be in [0, 1)"
        self.p = p
        self.rng = np.random.default_rng(seed)
        self.params, self.grads = {}, {}            # no parameters

    def forward(self, x, training=False):           # x (B, T, D)
        if not training or self.p == 0:
            self.mask = None
            return x.copy()
        keep = self.rng.random(x.shape) >= self.p   # (B, T, D), True with probability 1 - p
        self.mask = (keep / (1 - self.p)).astype(x.dtype)   # 0 or 1/(1-p)
        return x * self.mask

    def backward(self, grad_out):                   # grad_out (B, T, D)
        return grad_out.copy() if self.mask is None else grad_out * self.mask   # the same mask


@gradlab.register("dropout")
def build(cfg):
    return Dropout(cfg.dropout, seed=cfg.seed)
