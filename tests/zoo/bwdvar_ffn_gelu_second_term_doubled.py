"""Broken: the product rule applied to h (1 + t) with the 0.5 kept only on the first term:
dgelu = 0.5 (1 + t) + h (1 - t^2) sqrt(2/pi) (1 + 3 * 0.044715 h^2)."""
import numpy as np

import gradlab
from bwdvar_ffn_parts import C, MLP


class SecondTermDoubled(MLP):
    def dgelu(self):
        h = self.h
        t = np.tanh(C * (h + 0.044715 * h ** 3))
        return 0.5 * (1 + t) + h * (1 - t * t) * C * (1 + 3 * 0.044715 * h * h)   # BUG: 0.5 lost on this term


@gradlab.register("ffn")
def build(cfg):
    return SecondTermDoubled(cfg.d_model, cfg.d_ff, cfg.dtype)
