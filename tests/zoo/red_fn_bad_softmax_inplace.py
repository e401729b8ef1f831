"""Broken (one bug): softmax that shifts and exponentiates its input in place."""
import numpy as np

import gradlab


@gradlab.register("softmax")
def softmax(x, axis=-1):
    x -= x.max(axis=axis, keepdims=True)                               # BUG: modifies the caller's array
    np.exp(x, out=x)
    return x / x.sum(axis=axis, keepdims=True)
