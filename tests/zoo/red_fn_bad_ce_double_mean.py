"""Broken (one bug): grad divided by the number of tokens twice (once in a
"mean" softmax gradient helper, once again at the end); the loss is right."""
import numpy as np

import gradlab


def _softmax_grad_mean(p, onehot):
    return (p - onehot) / p.shape[0]


def cross_entropy(logits, targets, ignore_index=None):
    B, T, V = logits.shape
    z = logits.reshape(-1, V)
    y = targets.reshape(-1)
    keep = (y != ignore_index) if ignore_index is not None else np.ones_like(y, dtype=bool)
    y = np.where(keep, y, 0)
    z = z - z.max(axis=1, keepdims=True)
    p = np.exp(z) / np.exp(z).sum(axis=1, keepdims=True)
    n = keep.sum()
    loss = -np.log(p[np.arange(y.size), y])[keep].sum() / n
    onehot = np.zeros_like(p)
    onehot[np.arange(y.size), y] = 1
    grad = _softmax_grad_mean(p, onehot) * keep[:, None]
    grad = grad / n                                                    # BUG: divided a second time
    return loss, grad.reshape(B, T, V)


gradlab.register("cross_entropy")(cross_entropy)
