"""Broken (one bug): ignored positions get zero loss and zero gradient, but
the mean still divides by every position (B*T), ignored ones included."""
import numpy as np

import gradlab


def cross_entropy(logits, targets, ignore_index=None):
    N = targets.size
    V = logits.shape[-1]
    z = logits.reshape(N, V)
    t = targets.reshape(N)
    valid = np.ones(N, bool) if ignore_index is None else t != ignore_index
    t = t * valid
    z = z - z.max(1, keepdims=True)
    lse = np.log(np.exp(z).sum(1))
    losses = (lse - z[np.arange(N), t]) * valid
    loss = losses.sum() / N                                            # BUG: N counts ignored positions
    g = np.exp(z - lse[:, None])
    g[np.arange(N), t] -= 1
    g *= valid[:, None] / N
    return loss, g.reshape(logits.shape)


gradlab.register("cross_entropy")(cross_entropy)
