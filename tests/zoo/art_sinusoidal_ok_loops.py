"""Two loops, straight from the paper's formula, in float32."""
import math

import numpy as np

import gradlab


def sinusoid_table(max_len, d_model):
    table = np.zeros((max_len, d_model), dtype=np.float32)
    for pos in range(max_len):
        for i in range(0, d_model, 2):
            angle = pos / (10000 ** (i / d_model))
            table[pos, i] = math.sin(angle)
            if i + 1 < d_model:
                table[pos, i + 1] = math.cos(angle)
    return table


gradlab.register("sinusoidal")(sinusoid_table)
