"""Broken (one bug): always rescales to max_norm, scaling small gradients up."""
import math

import gradlab


def clip_grad_norm(grads, max_norm):
    total_norm = math.sqrt(sum(float((g * g).sum()) for g in grads))
    scale = max_norm / (total_norm + 1e-6)
    for g in grads:                                                # BUG: no "if scale < 1"
        g *= scale
    return total_norm


gradlab.register("clip_grad_norm")(clip_grad_norm)
