"""Broken (one bug): clips each gradient by its own norm and returns the
global norm."""
import numpy as np

import gradlab


def clip_grad_norm(grads, max_norm):
    total = 0.0
    for g in grads:
        n = np.sqrt((g ** 2).sum())
        total += n ** 2
        if n > max_norm:
            g *= max_norm / (n + 1e-6)                              # BUG: per-array norm
    return np.sqrt(total)


gradlab.register("clip_grad_norm")(clip_grad_norm)
