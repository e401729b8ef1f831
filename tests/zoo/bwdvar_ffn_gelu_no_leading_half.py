"""Broken: the GELU derivative without its leading 0.5, (1 + t) + h (1 - t^2) sqrt(2/pi) (...): twice the
derivative, so w1, b1 and x get 2x their gradients while w2 and b2 are right."""
import numpy as np

import gradlab
from bwdvar_ffn_parts import C, MLP


class NoLeadingHalf(MLP):
    def dgelu(self):
        h = self.h
        t = np.tanh(C * (h + 0.044715 * h ** 3))
        return (1 + t) + h * (1 - t * t) * C * (1 + 3 * 0.044715 * h * h)   # BUG: 0.5 (...) lost as a whole


@gradlab.register("ffn")
def build(cfg):
    return NoLeadingHalf(cfg.d_model, cfg.d_ff, cfg.dtype)
