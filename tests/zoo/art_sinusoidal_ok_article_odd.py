"""Article 000's exp/log form with the cos half sliced, so an odd d_model works."""
import numpy as np

import gradlab


@gradlab.register("sinusoidal")
def positional_encoding(max_len, d_model):
    pe = np.zeros((max_len, d_model))
    position = np.arange(0, max_len).reshape(-1, 1)
    div_term = np.exp(np.arange(0, d_model, 2) * -(np.log(10000.0) / d_model))
    pe[:, 0::2] = np.sin(position * div_term)
    pe[:, 1::2] = np.cos(position * div_term)[:, :d_model // 2]
    return pe
