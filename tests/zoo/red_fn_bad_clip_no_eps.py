"""Questionable: leaves out the + 1e-6 (scale = max_norm / total_norm). The
result differs by ~1e-7 of the gradient's size; the 1e-6 only guards a zero norm."""
import math

import gradlab


def clip_grad_norm(grads, max_norm):
    total_norm = math.sqrt(sum(float((g * g).sum()) for g in grads))
    if total_norm > max_norm:
        scale = max_norm / total_norm                               # no + 1e-6
        for g in grads:
            g *= scale
    return total_norm


gradlab.register("clip_grad_norm")(clip_grad_norm)
