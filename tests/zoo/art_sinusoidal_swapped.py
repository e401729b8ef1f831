"""cos on the even columns, sin on the odd ones."""
import numpy as np

import gradlab


@gradlab.register("sinusoidal")
def pe(max_len, d_model):
    table = np.zeros((max_len, d_model))
    i = np.arange(0, d_model, 2)
    angle = np.arange(max_len)[:, None] / 10000 ** (i / d_model)
    table[:, 0::2] = np.cos(angle)
    table[:, 1::2] = np.sin(angle[:, :d_model // 2])
    return table
