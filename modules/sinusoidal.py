"""Sinusoidal positional encoding ("Attention Is All You Need", article 000 §2.2)."""
import numpy as np

import gradlab


def positional_encoding(max_len, d_model):
    """-> table (max_len, d_model): column 2i is sin(pos / 10000**(2i/d_model)), column 2i+1 the cos of
    the same angle (sin and cos interleaved, one frequency per pair). An odd d_model keeps the last sin."""
    pos = np.arange(max_len)[:, None]                           # (max_len, 1)
    even = np.arange(0, d_model, 2)                             # the 2i of each pair: 0, 2, 4, ...
    angle = pos / 10000.0 ** (even / d_model)                   # (max_len, ceil(d_model / 2))
    pe = np.zeros((max_len, d_model))
    pe[:, 0::2] = np.sin(angle)
    pe[:, 1::2] = np.cos(angle[:, :d_model // 2])               # odd d_model: one cos column fewer
    return pe


gradlab.register("sinusoidal")(positional_encoding)
