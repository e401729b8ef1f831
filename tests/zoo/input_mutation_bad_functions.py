"""Broken: softmax and cross_entropy shift the caller's logits in place (x -= max)."""
import numpy as np

import gradlab


@gradlab.register("softmax")
def softmax(x, axis=-1):
    x -= x.max(axis=axis, keepdims=True)
    e = np.exp(x)
    return e / e.sum(axis=axis, keepdims=True)


@gradlab.register("cross_entropy")
def cross_entropy(logits, targets, ignore_index=None):
    logits -= logits.max(-1, keepdims=True)
    logp = logits - np.log(np.exp(logits).sum(-1, keepdims=True))
    t = targets.reshape(-1)
    keep = np.ones(t.shape, bool) if ignore_index is None else t != ignore_index
    n = max(int(keep.sum()), 1)
    rows = np.arange(t.size)
    V = logits.shape[-1]
    flat = logp.reshape(-1, V)
    loss = -(flat[rows, np.where(keep, t, 0)] * keep).sum() / n
    grad = np.exp(flat)
    grad[rows, np.where(keep, t, 0)] -= 1
    grad *= keep[:, None] / n
    return loss, grad.reshape(logits.shape)
