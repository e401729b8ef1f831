"""Broken: the epsilon argument is overwritten inside the function (epsilon = 0.1): right at the default,
wrong at every other epsilon."""
import numpy as np
import gradlab

def smoothed_ce(logits, targets, epsilon=0.1):
    """logsumexp form; loss = (1-eps)*nll + eps*mean(-logp); np.eye one-hot"""
    epsilon = 0.1                                                  # BUG: the argument is overwritten
    V = logits.shape[-1]
    z = logits.reshape(-1, V)
    mx = z.max(1, keepdims=True)
    lse = mx + np.log(np.exp(z - mx).sum(1, keepdims=True))
    logp = z - lse
    t = targets.reshape(-1)
    nll = -logp[np.arange(t.size), t]
    smooth = -logp.mean(1)
    loss = ((1 - epsilon) * nll + epsilon * smooth).mean()
    onehot = np.eye(V, dtype=z.dtype)[t]
    grad = (np.exp(logp) - (1 - epsilon) * onehot - epsilon / V) / t.size
    return loss, grad.reshape(logits.shape)

gradlab.register("label_smoothing")(smoothed_ce)
