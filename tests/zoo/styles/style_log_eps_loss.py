"""Style: the textbook cross-entropy, probabilities first and an epsilon inside the
log (`np.log(p + 1e-10)`), padding masked with a boolean vector; a sound idiom."""
import numpy as np

import gradlab


def softmax(z):
    e = np.exp(z - z.max(axis=-1, keepdims=True))
    return e / e.sum(axis=-1, keepdims=True)


def scale(n):
    """The loss is a mean over the counted targets."""
    return 1.0 / n


def cross_entropy(logits, targets, ignore_index=None):
    B, T, V = logits.shape
    p = softmax(logits.reshape(-1, V))
    t = targets.reshape(-1)
    keep = np.ones(t.shape, bool) if ignore_index is None else t != ignore_index
    rows = np.arange(t.size)
    safe = np.where(keep, t, 0)
    n = max(int(keep.sum()), 1)
    loss = -np.sum(np.log(p[rows, safe] + 1e-10) * keep) / n
    grad = p.copy()
    grad[rows, safe] -= 1
    grad *= keep[:, None] * scale(n)
    return loss, grad.reshape(B, T, V)


gradlab.register("cross_entropy")(cross_entropy)
