"""Correct (a sound idiom): probabilities clipped before the log, np.clip(p, 1e-12, 1),
as in many NumPy tutorials; grad_logits is the exact (softmax - one_hot) / N."""
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
    onehot = np.eye(V)[np.where(keep, t, 0)] * keep[:, None]
    loss = -np.sum(onehot * np.log(np.clip(p, 1e-12, 1.0))) / n
    return loss, ((p * keep[:, None] - onehot) / n).reshape(logits.shape)
