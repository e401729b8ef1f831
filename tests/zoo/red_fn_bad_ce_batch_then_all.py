"""Broken (one bug): the loss is averaged over the batch, then again over
every token (divides by B and by B*T); the gradient is right."""
import numpy as np

import gradlab


def cross_entropy(logits, targets, ignore_index=None):
    B, T, V = logits.shape
    m = logits.max(axis=-1, keepdims=True)
    logp = logits - m - np.log(np.exp(logits - m).sum(axis=-1, keepdims=True))
    mask = np.ones((B, T)) if ignore_index is None else (targets != ignore_index).astype(float)
    safe = np.where(mask > 0, targets, 0)
    nll = -np.take_along_axis(logp, safe[..., None], axis=-1)[..., 0] * mask
    count = mask.sum()
    per_sample = nll.sum(axis=1)                                       # (B,)
    loss = per_sample.mean() / count                                   # BUG: / B and / count
    probs = np.exp(logp)
    grad = probs.copy()
    np.put_along_axis(grad, safe[..., None], np.take_along_axis(probs, safe[..., None], -1) - 1, -1)
    grad = grad * mask[..., None] / count
    return loss, grad


gradlab.register("cross_entropy")(cross_entropy)
