"""[sin | cos] concatenated, a layout some codebases use; the paper interleaves them."""
import numpy as np

import gradlab


@gradlab.register("sinusoidal")
def pe(max_len, d_model):
    half = (d_model + 1) // 2
    i = np.arange(half)
    angle = np.arange(max_len)[:, None] / 10000 ** (2 * i / d_model)
    return np.concatenate([np.sin(angle), np.cos(angle)[:, :d_model - half]], axis=1)
