"""Broken by rounding: art_dropout_ok_float32_mask.py's dropout with its scaled mask kept in float16,
1/(1-p) = 1.4285714 rounded to 1.4287109 (1e-4 off: the expectation of the output drifts)."""
import numpy as np

import gradlab
from art_dropout_ok_float32_mask import Dropout


class HalfMaskDropout(Dropout):
    def forward(self, x, training=True):
        out = super().forward(x, training)
        if self.mask is None:
            return out
        self.mask = self.mask.astype(np.float16)                       # BUG: float16
        return x * self.mask


@gradlab.register("dropout")
def build(cfg):
    return HalfMaskDropout(cfg.dropout, cfg.seed)
