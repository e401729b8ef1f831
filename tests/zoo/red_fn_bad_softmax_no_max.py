"""Broken (one bug): softmax without subtracting the maximum (overflows)."""
import numpy as np

import gradlab


@gradlab.register("softmax")
def softmax(x, axis=-1):
    ex = np.exp(x)                                                     # BUG: no max subtracted
    return ex / ex.sum(axis=axis, keepdims=True)
