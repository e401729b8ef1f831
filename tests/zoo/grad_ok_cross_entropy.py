"""Correct: a student's cross-entropy with ignore_index, written with a one-hot
matrix instead of fancy indexing."""
import numpy as np

import gradlab


def cross_entropy(logits, targets, ignore_index=None):
    V = logits.shape[-1]
    z = logits.reshape(-1, V)
    t = targets.reshape(-1)
    keep = np.ones(t.shape, dtype=bool) if ignore_index is None else t != ignore_index
    n = max(int(keep.sum()), 1)
    onehot = np.eye(V, dtype=logits.dtype)[np.where(keep, t, 0)] * keep[:, None]
    z = z - z.max(axis=1, keepdims=True)
    logp = z - np.log(np.exp(z).sum(axis=1, keepdims=True))
    loss = -(onehot * logp).sum() / n
    grad = (np.exp(logp) * keep[:, None] - onehot) / n
    return float(loss), grad.reshape(logits.shape)


gradlab.register("cross_entropy")(cross_entropy)
