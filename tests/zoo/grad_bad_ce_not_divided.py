"""Broken: grad_logits is not divided by the number of targets (10x too large at B*T = 10), though the loss
is the mean: the one-hot cross-entropy of grad_ok_cross_entropy.py with that one slip."""
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
    grad = np.exp(logp) * keep[:, None] - onehot
    return float(loss), grad.reshape(logits.shape)


gradlab.register("cross_entropy")(cross_entropy)
