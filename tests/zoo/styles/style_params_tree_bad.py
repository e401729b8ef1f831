"""Broken twin: the GELU derivative leaves out the x * sech^2 term (only 0.5 * (1 + tanh))."""
import numpy as np

import gradlab
from style_params_tree import NAMES, TreeFFN


class HalfGelu(TreeFFN):
    def activation_backward(self, da):
        u = np.sqrt(2 / np.pi) * (self.h + 0.044715 * self.h ** 3)
        return da * 0.5 * (1 + np.tanh(u))                            # BUG: the product rule's second term


@gradlab.register("ffn", param_map=NAMES)
def build(cfg):
    return HalfGelu(cfg.d_model, cfg.d_ff, cfg.dtype, cfg.seed)
