"""Broken quietly: clipping to a total norm of 1 whatever max_norm says (the default max_norm is 1)."""
import numpy as np

import gradlab


@gradlab.register("clip_grad_norm")
def clip(grads, max_norm):
    total = float(np.sqrt(sum(float((g * g).sum()) for g in grads)))
    coef = 1.0 / (total + 1e-6)                                    # BUG: max_norm / (total + 1e-6)
    if coef < 1:
        for g in grads:
            g *= coef
    return total
