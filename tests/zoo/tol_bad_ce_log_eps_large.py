"""Broken: the guard inside the log is far too large, -log(p + 1e-3): the loss is off by up to 1e-3 / p
per row, beyond any sound idiom; grad_logits is the exact (softmax - one_hot) / N. No known mistake
reproduces it, so no cause may be named."""
import numpy as np

import gradlab


@gradlab.register("cross_entropy")
def cross_entropy(logits, targets, ignore_index=None):
    V = logits.shape[-1]
    z = logits.reshape(-1, V)
    t = targets.reshape(-1)
    keep = np.ones(t.shape, bool) if ignore_index is None else t != ignore_index
    n = max(int(keep.sum()), 1)
    e = np.exp(z - z.max(axis=1, keepdims=True))
    p = e / e.sum(axis=1, keepdims=True)
    rows, tt = np.arange(t.size), np.where(keep, t, 0)
    loss = -(np.log(p[rows, tt] + 1e-3) * keep).sum() / n    # BUG: eps 1e-3
    grad = p.copy()
    grad[rows, tt] -= 1
    return loss, (grad * keep[:, None] / n).reshape(logits.shape)
