"""Broken: softmax takes an axis argument and ignores it (always the last axis)."""
import numpy as np

import gradlab


@gradlab.register("softmax")
def softmax(x, axis=-1):
    e = np.exp(x - x.max(-1, keepdims=True))                 # BUG: axis unused
    return e / e.sum(-1, keepdims=True)
