"""Broken (one bug): returns the norm after clipping."""
import numpy as np

import gradlab


def clip_grad_norm(grads, max_norm):
    norm = np.sqrt(sum(float(np.vdot(g, g)) for g in grads))
    factor = max_norm / (norm + 1e-6)
    if factor < 1:
        for g in grads:
            g *= factor
        norm = np.sqrt(sum(float(np.vdot(g, g)) for g in grads))  # BUG: the clipped norm is returned
    return norm


gradlab.register("clip_grad_norm")(clip_grad_norm)
