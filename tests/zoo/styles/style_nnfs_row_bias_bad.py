"""Broken twin: the bias gradient is a mean over the rows (the tokens), not a sum."""
import numpy as np

import gradlab
from style_nnfs_row_bias import FFN, NAMES, Dense


class MeanBias(Dense):
    @staticmethod
    def bias_grad(dvalues):
        return np.mean(dvalues, axis=0, keepdims=True)             # BUG: np.sum


class BadFFN(FFN):
    Layer = MeanBias


@gradlab.register("ffn", param_map=NAMES)
def build(cfg):
    return BadFFN(cfg)
