"""Broken (one bug): the 'norm' is a root-mean-square over all entries, not the total L2 norm; scaling is
in place, but the RMS is below max_norm where the norm is not, so nothing is clipped."""
import numpy as np

import gradlab


@gradlab.register("clip_grad_norm")
def clip_grad_norm(grads, max_norm):
    flat = np.concatenate([g.ravel() for g in grads])
    norm = float(np.sqrt(np.mean(flat ** 2)))                         # BUG: np.sqrt(np.sum(flat ** 2))
    if norm > max_norm:
        for g in grads:
            g *= max_norm / (norm + 1e-6)
    return norm
