"""Stateless functions: softmax, cross_entropy, clip_grad_norm, schedule."""
import math

import numpy as np

import gradlab


def softmax(x, axis=-1):
    """exp(x) / sum(exp(x)) along `axis`, stable: the row maximum is subtracted
    first, so large inputs do not overflow. Rows that are -inf except for at
    least one finite entry (masked attention) give exactly 0 where -inf."""
    e = np.exp(x - x.max(axis=axis, keepdims=True))
    return e / e.sum(axis=axis, keepdims=True)


def cross_entropy(logits, targets, ignore_index=None):
    """logits (B, T, V), targets int (B, T) -> (loss, grad_logits (B, T, V)).

    loss is the mean of -log softmax(logits)[target] over the positions whose
    target is not `ignore_index`; grad_logits is its gradient. If every target
    is ignored there is nothing to average: loss 0.0 and an all-zero gradient."""
    V = logits.shape[-1]
    z = logits.reshape(-1, V)                                   # (N, V), N = B*T
    t = np.asarray(targets).reshape(-1)                         # (N,)
    keep = np.ones_like(t, dtype=bool) if ignore_index is None else t != ignore_index   # (N,)
    n = int(keep.sum())
    if n == 0:
        return 0.0, np.zeros_like(logits)
    t = np.where(keep, t, 0)                                    # any valid index; those rows are masked out
    shifted = z - z.max(axis=-1, keepdims=True)                 # (N, V)
    log_probs = shifted - np.log(np.exp(shifted).sum(axis=-1, keepdims=True))   # (N, V)
    rows = np.arange(len(t))
    loss = -log_probs[rows, t][keep].sum() / n
    grad = np.exp(log_probs)                                    # softmax (N, V)
    grad[rows, t] -= 1                                          # softmax - one_hot(target)
    grad *= keep[:, None]                                       # ignored rows -> 0
    grad /= n                                                   # mean over the rest
    return float(loss), grad.reshape(logits.shape)


def clip_grad_norm(grads, max_norm):
    """Scale every array of `grads` in place so their global L2 norm is at most
    `max_norm` (by max_norm / (total_norm + 1e-6), only when that is below 1).
    Returns the norm measured before clipping."""
    grads = list(grads)
    total_norm = math.sqrt(sum(float((g * g).sum()) for g in grads))
    scale = max_norm / (total_norm + 1e-6)
    if scale < 1:
        for g in grads:
            g *= scale                                          # in place: the caller's arrays change
    return total_norm


def schedule(step, d_model, warmup_steps):
    """Warmup ("Noam") learning rate: d_model**-0.5 * min(step**-0.5,
    step * warmup_steps**-1.5); rises linearly for warmup_steps steps, then
    decays as 1/sqrt(step). Steps are counted from 1."""
    assert step >= 1, f"step={step}: steps are counted from 1"
    return d_model ** -0.5 * min(step ** -0.5, step * warmup_steps ** -1.5)


gradlab.register("softmax")(softmax)
gradlab.register("cross_entropy")(cross_entropy)
gradlab.register("clip_grad_norm")(clip_grad_norm)
gradlab.register("schedule")(schedule)
