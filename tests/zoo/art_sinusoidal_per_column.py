"""Each column its own exponent j / d_model: the cos column does not share its sin's angle."""
import numpy as np

import gradlab


@gradlab.register("sinusoidal")
def pe(max_len, d_model):
    j = np.arange(d_model)
    angle = np.arange(max_len)[:, None] / 10000 ** (j / d_model)
    return np.where(j % 2 == 0, np.sin(angle), np.cos(angle))
