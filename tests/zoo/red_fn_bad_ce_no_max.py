"""Broken (one bug): log-sum-exp without subtracting the row maximum."""
import numpy as np

import gradlab


def cross_entropy(logits, targets, ignore_index=None):
    V = logits.shape[-1]
    flat, y = logits.reshape(-1, V), targets.reshape(-1)
    keep = np.ones(y.shape, bool) if ignore_index is None else y != ignore_index
    y = np.where(keep, y, 0)
    sumexp = np.exp(flat).sum(axis=1, keepdims=True)                  # BUG: no max subtracted
    logp = flat - np.log(sumexp)
    n = keep.sum()
    loss = -(logp[np.arange(y.size), y] * keep).sum() / n
    grad = np.exp(flat) / sumexp
    grad[np.arange(y.size), y] -= 1
    grad = grad * keep[:, None] / n
    return loss, grad.reshape(logits.shape)


gradlab.register("cross_entropy")(cross_entropy)
