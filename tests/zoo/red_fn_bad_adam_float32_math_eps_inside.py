"""Broken (one bug): the float32 Adam with eps inside the square root."""
import numpy as np

import gradlab
from red_fn_ok_adam_float32_math import Adam


class EpsInside(Adam):
    def update(self, m_hat, v_hat):
        return m_hat / np.sqrt(v_hat + self.eps)                    # BUG: sqrt(v_hat) + eps


@gradlab.register("adam")
def build(cfg):
    return EpsInside(cfg)
