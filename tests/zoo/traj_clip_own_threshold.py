"""Broken quietly: clipping only when the total norm is above 1 as well as above max_norm."""
import numpy as np

import gradlab


@gradlab.register("clip_grad_norm")
def clip(grads, max_norm):
    total = float(np.sqrt(sum(float((g * g).sum()) for g in grads)))
    coef = max_norm / (total + 1e-6)
    if coef < 1 and total > 1:                                     # BUG: a threshold of its own
        for g in grads:
            g *= coef
    return total
