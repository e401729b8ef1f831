"""Correct, in float32 throughout with the frequencies through exp/log (the PyTorch tutorial's form):
div_term = exp(arange(0, d, 2) * -(log(10000) / d))."""
import numpy as np

import gradlab


@gradlab.register("sinusoidal")
def sinusoidal(max_len, d_model):
    position = np.arange(max_len, dtype=np.float32)[:, None]
    div_term = np.exp(np.arange(0, d_model, 2, dtype=np.float32) * np.float32(-np.log(10000.0) / d_model))
    pe = np.zeros((max_len, d_model), dtype=np.float32)
    pe[:, 0::2] = np.sin(position * div_term)
    pe[:, 1::2] = np.cos(position * div_term[:d_model // 2])
    return pe
