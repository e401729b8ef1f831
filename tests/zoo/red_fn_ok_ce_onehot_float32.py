"""Correct: cross-entropy through an explicit one-hot matrix, computed in
float32 whatever the input dtype (a student's "GPU-style" habit), the
ignore mask as float weights."""
import numpy as np

import gradlab


def xent(logits, targets, ignore_index=None):
    B, T, V = logits.shape
    x = logits.astype(np.float32).reshape(B * T, V)
    y = np.asarray(targets).reshape(B * T)
    w = np.ones(B * T, dtype=np.float32)
    if ignore_index is not None:
        w[y == ignore_index] = 0.0
        y = np.where(y == ignore_index, 0, y)
    onehot = np.eye(V, dtype=np.float32)[y]
    m = x.max(axis=1, keepdims=True)
    lse = m + np.log(np.exp(x - m).sum(axis=1, keepdims=True))
    logp = x - lse
    denom = max(float(w.sum()), 1.0)
    loss = -(w * (onehot * logp).sum(axis=1)).sum() / denom
    dlogits = (np.exp(logp) - onehot) * w[:, None] / denom
    return float(loss), dlogits.reshape(B, T, V)


gradlab.register("cross_entropy")(xent)
