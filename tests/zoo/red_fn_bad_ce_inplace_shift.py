"""Broken (one bug): cross-entropy that subtracts the row maximum from the
caller's logits in place (logits -= max) before the log-sum-exp."""
import numpy as np

import gradlab


def cross_entropy(logits, targets, ignore_index=None):
    B, T, V = logits.shape
    logits -= logits.max(axis=-1, keepdims=True)                       # BUG: edits the caller's array
    lse = np.log(np.exp(logits).sum(axis=-1, keepdims=True))
    logp = logits - lse
    keep = np.ones((B, T), bool) if ignore_index is None else targets != ignore_index
    t = np.where(keep, targets, 0)
    n = keep.sum()
    picked = np.take_along_axis(logp, t[..., None], axis=-1)[..., 0]
    loss = -(picked * keep).sum() / n
    grad = np.exp(logp)
    np.put_along_axis(grad, t[..., None], np.take_along_axis(grad, t[..., None], -1) - 1, -1)
    return loss, grad * keep[..., None] / n


gradlab.register("cross_entropy")(cross_entropy)
