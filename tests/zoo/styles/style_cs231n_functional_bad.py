"""Broken twin: the bias gradient averages over the rows instead of summing."""
import numpy as np

import gradlab
from style_cs231n_functional import WIDTH, Affine


class BiasMean(Affine):
    def backward_rows(self, dout):
        dx, dw, db = super().backward_rows(dout)
        return dx, dw, np.mean(dout, axis=0)           # BUG: np.sum(dout, axis=0)


@gradlab.register("linear")
def build(cfg):
    return BiasMean(cfg.d_model, WIDTH, cfg.dtype, cfg.seed)
