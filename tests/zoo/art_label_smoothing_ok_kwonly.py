"""Correct, with epsilon keyword-only (`*, epsilon=0.1`): CONTRACT §3 asks for the argument by that name."""
import numpy as np

import gradlab


@gradlab.register("label_smoothing")
def label_smoothing(logits, targets, *, epsilon=0.1):
    V = logits.shape[-1]
    z = logits - logits.max(axis=-1, keepdims=True)
    log_p = z - np.log(np.exp(z).sum(axis=-1, keepdims=True))
    y = np.full(logits.shape, epsilon / V)
    np.put_along_axis(y, targets[..., None], 1 - epsilon + epsilon / V, axis=-1)
    n = targets.size
    return float(-(y * log_p).sum() / n), (np.exp(log_p) - y) / n
