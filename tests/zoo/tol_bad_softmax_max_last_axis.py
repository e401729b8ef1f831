"""Broken: softmax(x, axis) subtracts the maximum over the last axis whatever `axis` says (right for
axis=-1 only: along any other axis the shift is not constant within what is normalised)."""
import numpy as np

import gradlab


@gradlab.register("softmax")
def softmax(x, axis=-1):
    e = np.exp(x - np.max(x, axis=-1, keepdims=True))      # BUG: axis=-1, not axis=axis
    return e / np.sum(e, axis=axis, keepdims=True)
