"""A float16 table with positions counted from 1: at max_len 512 the per-entry allowance of float16 angles is
large at the far end, and every known slip seemed to match it."""
import numpy as np

import gradlab


@gradlab.register("sinusoidal")
def sinusoidal(max_len, d_model):
    pos = np.arange(1, max_len + 1)[:, None]
    i = np.arange(0, d_model, 2)
    angle = pos / 10000.0 ** (i / d_model)
    pe = np.zeros((max_len, d_model))
    pe[:, 0::2] = np.sin(angle)
    pe[:, 1::2] = np.cos(angle)[:, :d_model // 2]
    return pe.astype(np.float16)
