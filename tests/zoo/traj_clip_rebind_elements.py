"""Broken: clipping puts new arrays into the list (grads[i] = g * coef): whoever holds the list sees
clipped values, the arrays themselves (a model's gradients, held in its grads dict) stay as they were."""
import numpy as np

import gradlab


@gradlab.register("clip_grad_norm")
def clip(grads, max_norm):
    total = np.sqrt(sum(np.sum(g ** 2) for g in grads))
    coef = max_norm / (total + 1e-6)
    if coef < 1:
        for i, g in enumerate(grads):
            grads[i] = g * coef                                    # BUG: g *= coef
    return total
