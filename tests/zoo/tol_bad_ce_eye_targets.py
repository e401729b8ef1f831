"""Broken: one-hot targets by np.eye(V)[targets], ignored rows zeroed afterwards: right for an
ignore_index inside the vocabulary (0), an IndexError for PyTorch's -100."""
import numpy as np

import gradlab


@gradlab.register("cross_entropy")
def cross_entropy(logits, targets, ignore_index=None):
    V = logits.shape[-1]
    z = logits.reshape(-1, V)
    t = targets.reshape(-1)
    onehot = np.eye(V)[t]                                     # BUG: indexes with the ignored id too
    keep = np.ones(t.shape, bool) if ignore_index is None else t != ignore_index
    onehot[~keep] = 0
    n = max(int(keep.sum()), 1)
    zs = z - z.max(axis=1, keepdims=True)
    logp = zs - np.log(np.exp(zs).sum(axis=1, keepdims=True))
    loss = -np.sum(onehot * logp) / n
    return loss, ((np.exp(logp) * keep[:, None] - onehot) / n).reshape(logits.shape)
