"""Broken: backward differentiates 0.5 h (1 + tanh(...)) as if the tanh were a
constant: dgelu = 0.5 (1 + t)."""
import numpy as np

import gradlab
from bwdvar_ffn_parts import C, MLP


class TanhConstant(MLP):
    def dgelu(self):
        t = np.tanh(C * (self.h + 0.044715 * self.h ** 3))
        return 0.5 * (1 + t)                         # BUG: the tanh depends on h too


@gradlab.register("ffn")
def build(cfg):
    return TanhConstant(cfg.d_model, cfg.d_ff, cfg.dtype)
