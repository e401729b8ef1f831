"""Broken (one bug): cross-entropy that replaces ignored targets by 0 in the
caller's targets array (targets[mask] = 0) instead of in a copy."""
import numpy as np

import gradlab


def cross_entropy(logits, targets, ignore_index=None):
    B, T, V = logits.shape
    if ignore_index is None:
        mask = np.ones((B, T), dtype=bool)
    else:
        mask = targets != ignore_index
        targets[~mask] = 0                                             # BUG: edits the caller's targets
    z = logits - logits.max(-1, keepdims=True)
    logp = z - np.log(np.exp(z).sum(-1, keepdims=True))
    bi, ti = np.meshgrid(np.arange(B), np.arange(T), indexing="ij")
    n = mask.sum()
    loss = -(logp[bi, ti, targets] * mask).sum() / n
    grad = np.exp(logp)
    grad[bi, ti, targets] -= 1
    grad *= mask[..., None] / n
    return loss, grad


gradlab.register("cross_entropy")(cross_entropy)
