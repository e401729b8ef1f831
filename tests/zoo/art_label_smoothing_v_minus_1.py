"""Target gets 1 - epsilon, the V - 1 others share epsilon (another common convention)."""
import numpy as np

import gradlab


@gradlab.register("label_smoothing")
def label_smoothing(logits, targets, epsilon=0.1):
    B, T, V = logits.shape
    z = logits - logits.max(axis=-1, keepdims=True)
    log_probs = z - np.log(np.exp(z).sum(axis=-1, keepdims=True))
    y = np.full(logits.shape, epsilon / (V - 1))
    np.put_along_axis(y, targets[..., None], 1 - epsilon, axis=-1)
    N = B * T
    return -(y * log_probs).sum() / N, (np.exp(log_probs) - y) / N
