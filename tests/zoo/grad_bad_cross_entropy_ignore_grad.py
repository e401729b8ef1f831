"""Broken: the loss skips ignored targets but grad_logits does not: ignored
rows still get softmax as their gradient (and are divided by the kept count)."""
import numpy as np

import gradlab


def cross_entropy(logits, targets, ignore_index=None):
    V = logits.shape[-1]
    z = logits.reshape(-1, V)
    t = targets.reshape(-1)
    keep = np.ones(t.shape, dtype=bool) if ignore_index is None else t != ignore_index
    n = max(int(keep.sum()), 1)
    z = z - z.max(axis=1, keepdims=True)
    logp = z - np.log(np.exp(z).sum(axis=1, keepdims=True))
    rows = np.arange(len(t))
    loss = -logp[rows, t][keep].sum() / n
    grad = np.exp(logp)
    grad[rows[keep], t[keep]] -= 1
    return float(loss), (grad / n).reshape(logits.shape)


gradlab.register("cross_entropy")(cross_entropy)
