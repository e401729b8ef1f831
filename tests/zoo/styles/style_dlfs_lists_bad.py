"""Broken twin: the square weight's gradient is transposed (dout.T @ x): the shape
is right because the linear maps d_model to d_model."""
import numpy as np

import gradlab
from style_dlfs_lists import Affine


class TransposedGrad(Affine):
    def weight_grad(self, x2, d2):
        return np.dot(d2.T, x2)                       # BUG: (x.T @ dout).T


@gradlab.register("linear")
def build_linear(cfg):
    rng = np.random.default_rng(cfg.seed)
    W = (rng.standard_normal((cfg.d_model, cfg.d_model)) / np.sqrt(cfg.d_model)).astype(cfg.dtype)
    return TransposedGrad(W, np.zeros(cfg.d_model, cfg.dtype))
