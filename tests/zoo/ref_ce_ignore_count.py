"""Broken: positions whose target is ignore_index get no loss, but are still counted in the mean."""
import numpy as np

import gradlab


@gradlab.register("cross_entropy")
def cross_entropy(logits, targets, ignore_index=None):
    B, T, V = logits.shape
    z = logits.reshape(-1, V)
    t = targets.reshape(-1)
    keep = np.ones(len(t), bool) if ignore_index is None else t != ignore_index
    z = z - z.max(1, keepdims=True)
    p = np.exp(z) / np.exp(z).sum(1, keepdims=True)
    safe = np.where(keep, t, 0)
    loss = -(np.log(p[np.arange(len(t)), safe]) * keep).sum() / len(t)
    p[np.arange(len(t)), safe] -= 1
    return loss, (p * keep[:, None] / len(t)).reshape(B, T, V)
