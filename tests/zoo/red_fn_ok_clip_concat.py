"""Correct: global norm from one concatenated vector, scaled with np.multiply(out=)."""
import numpy as np

import gradlab


def clip_grad_norm(grads, max_norm):
    flat = np.concatenate([np.ravel(g) for g in grads])
    total = float(np.linalg.norm(flat))
    coef = max_norm / (total + 1e-6)
    if coef < 1.0:
        for g in grads:
            np.multiply(g, coef, out=g)
    return total


gradlab.register("clip_grad_norm")(clip_grad_norm)
