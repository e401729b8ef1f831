"""Broken: backward evaluates the GELU derivative at the activation output self.a
instead of the pre-activation self.h."""
import numpy as np

import gradlab
from bwdvar_ffn_parts import C, MLP


class AtOutput(MLP):
    def dgelu(self):
        h = self.a                                   # BUG: should be self.h
        t = np.tanh(C * (h + 0.044715 * h ** 3))
        return 0.5 * (1 + t) + 0.5 * h * (1 - t ** 2) * C * (1 + 3 * 0.044715 * h ** 2)


@gradlab.register("ffn")
def build(cfg):
    return AtOutput(cfg.d_model, cfg.d_ff, cfg.dtype)
