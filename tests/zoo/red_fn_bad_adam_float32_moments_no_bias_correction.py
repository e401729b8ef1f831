"""Broken (one bug): the float32-moments Adam without v's bias correction."""
import numpy as np

import gradlab
from red_fn_ok_adam_float32_moments import Adam


class NoVCorrection(Adam):
    @staticmethod
    def update(s, c):
        m_hat = s["exp_avg"] / (1 - c.beta1 ** s["step"])
        return c.lr * m_hat / (np.sqrt(s["exp_avg_sq"]) + c.eps)      # BUG: v not bias-corrected


@gradlab.register("adam")
def build(cfg):
    return NoVCorrection(cfg)
