"""Correct (a sound idiom): softmax(x, axis) dividing by (sum + eps) (EPS; the tests write copies with 1e-12 ... 1e-7)."""
import numpy as np

import gradlab

EPS = 1e-9


@gradlab.register("softmax")
def softmax(x, axis=-1):
    e = np.exp(x - np.max(x, axis=axis, keepdims=True))
    return e / (np.sum(e, axis=axis, keepdims=True) + EPS)
