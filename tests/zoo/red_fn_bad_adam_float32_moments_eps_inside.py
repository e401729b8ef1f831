"""Broken (one bug): the float32-moments Adam with eps inside the square root."""
import numpy as np

import gradlab
from red_fn_ok_adam_float32_moments import Adam


class EpsInside(Adam):
    @staticmethod
    def update(s, c):
        m_hat = s["exp_avg"] / (1 - c.beta1 ** s["step"])
        v_hat = s["exp_avg_sq"] / (1 - c.beta2 ** s["step"])
        return c.lr * m_hat / np.sqrt(v_hat + c.eps)                  # BUG: sqrt(v_hat) + eps


@gradlab.register("adam")
def build(cfg):
    return EpsInside(cfg)
