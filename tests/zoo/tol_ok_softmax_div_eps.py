"""Correct (a sound idiom): softmax(x, axis) dividing by (sum + eps); eps from GRADLAB_TEST_EPS (default 1e-9)."""
import os

import numpy as np

import gradlab

EPS = float(os.environ.get("GRADLAB_TEST_EPS", "1e-9"))


@gradlab.register("softmax")
def softmax(x, axis=-1):
    e = np.exp(x - np.max(x, axis=axis, keepdims=True))
    return e / (np.sum(e, axis=axis, keepdims=True) + EPS)
