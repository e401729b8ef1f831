"""Broken twin: the gradient is not divided by the number of targets (the loss is)."""
import numpy as np

import gradlab
import style_log_eps_loss as base


def cross_entropy(logits, targets, ignore_index=None):
    B, T, V = logits.shape
    p = base.softmax(logits.reshape(-1, V))
    t = targets.reshape(-1)
    keep = np.ones(t.shape, bool) if ignore_index is None else t != ignore_index
    rows = np.arange(t.size)
    safe = np.where(keep, t, 0)
    n = max(int(keep.sum()), 1)
    loss = -np.sum(np.log(p[rows, safe] + 1e-10) * keep) / n
    grad = p.copy()
    grad[rows, safe] -= 1
    grad *= keep[:, None]                              # BUG: * (1 / n) is missing
    return loss, grad.reshape(B, T, V)


gradlab.register("cross_entropy")(cross_entropy)
