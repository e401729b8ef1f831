"""Broken (against CONTRACT §3's softmax(x, axis=-1)): no axis argument at all."""
import numpy as np

import gradlab


@gradlab.register("softmax")
def softmax(x):
    e = np.exp(x - x.max(-1, keepdims=True))
    return e / e.sum(-1, keepdims=True)
