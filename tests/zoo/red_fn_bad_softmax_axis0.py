"""Broken (one bug): softmax with the default axis=0."""
import numpy as np

import gradlab


def softmax(x, axis=0):                                               # BUG: axis=0 by default
    e = np.exp(x - np.max(x, axis=axis, keepdims=True))
    return e / np.sum(e, axis=axis, keepdims=True)


gradlab.register("softmax")(softmax)
