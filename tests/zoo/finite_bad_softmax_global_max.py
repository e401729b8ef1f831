"""Broken (one bug): the softmax subtracts the maximum of the whole array, not each row's own."""
import numpy as np

import gradlab


@gradlab.register("softmax")
def softmax(x, axis=-1):
    shifted = np.exp(x - x.max())                                      # BUG: one max for every row
    return shifted / np.sum(shifted, axis=axis, keepdims=True)
