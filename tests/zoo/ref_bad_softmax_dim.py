"""Broken for the contract's signature: a PyTorch-minded softmax whose axis argument is called dim."""
import numpy as np

import gradlab


@gradlab.register("softmax")
def softmax(x, dim=-1):
    e = np.exp(x - x.max(axis=dim, keepdims=True))
    return e / e.sum(axis=dim, keepdims=True)
