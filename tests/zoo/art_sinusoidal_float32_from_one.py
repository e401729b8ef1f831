"""The float32 exp/log table with positions counted from 1: wrong by O(1) at every size."""
import numpy as np

import gradlab


@gradlab.register("sinusoidal")
def sinusoidal(max_len, d_model):
    position = np.arange(1, max_len + 1, dtype=np.float32)[:, None]
    div_term = np.exp(np.arange(0, d_model, 2, dtype=np.float32) * np.float32(-np.log(10000.0) / d_model))
    pe = np.zeros((max_len, d_model), dtype=np.float32)
    pe[:, 0::2] = np.sin(position * div_term)
    pe[:, 1::2] = np.cos(position * div_term[:d_model // 2])
    return pe
