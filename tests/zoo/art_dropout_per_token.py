"""Broken: one draw per token, broadcast over the features (a mask of shape (B, T, 1))."""
import numpy as np

import gradlab
from art_dropout_shared_over_batch import Dropout


class PerToken(Dropout):
    def forward(self, x, training=False):
        if not training:
            self.mask = np.ones(x.shape[:-1] + (1,), x.dtype)
            return x
        self.mask = (self.rng.random(x.shape[:-1] + (1,)) < 1 - self.p) / (1 - self.p)   # BUG: x.shape
        return x * self.mask


@gradlab.register("dropout")
def build(cfg):
    return PerToken(cfg.dropout, cfg.seed)
