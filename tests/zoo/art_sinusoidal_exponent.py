"""i already steps by 2, and the exponent doubles it again: 10000 ** (2 * i / d)."""
import numpy as np

import gradlab


@gradlab.register("sinusoidal")
def pe(max_len, d_model):
    table = np.zeros((max_len, d_model))
    i = np.arange(0, d_model, 2)
    angle = np.arange(max_len)[:, None] / 10000 ** (2 * i / d_model)
    table[:, 0::2] = np.sin(angle)
    table[:, 1::2] = np.cos(angle[:, :d_model // 2])
    return table
