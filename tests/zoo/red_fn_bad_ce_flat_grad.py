"""Broken (one bug): returns grad_logits flattened to (B*T, V)."""
import numpy as np

import gradlab


def cross_entropy(logits, targets, ignore_index=None):
    V = logits.shape[-1]
    x = logits.reshape(-1, V)
    y = targets.ravel()
    keep = np.ones(y.shape, bool) if ignore_index is None else y != ignore_index
    y = np.where(keep, y, 0)
    x = x - x.max(-1, keepdims=True)
    p = np.exp(x)
    p /= p.sum(-1, keepdims=True)
    n = keep.sum()
    loss = -np.log(p[np.arange(len(y)), y][keep]).sum() / n
    p[np.arange(len(y)), y] -= 1
    p *= keep[:, None] / n
    return loss, p                                                      # BUG: still (B*T, V)


gradlab.register("cross_entropy")(cross_entropy)
