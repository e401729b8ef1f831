"""Broken in the smallest way, beside a sound idiom: the log(p + eps) cross-entropy (eps 1e-7) whose
grad_logits is off by a relative 1e-4 in one typical element: the median-magnitude entry (how
benchmarks/bench_gradient.py measures detection; an entry far below the typical size is below any
directional test's resolution, idiom or not)."""
import numpy as np

import gradlab
from tol_ok_ce_log_eps import cross_entropy as sound


@gradlab.register("cross_entropy")
def cross_entropy(logits, targets, ignore_index=None):
    loss, grad = sound(logits, targets, ignore_index, eps=1e-7)
    mag = np.abs(grad).reshape(-1)
    nonzero = np.flatnonzero(mag > 0)
    k = nonzero[np.argsort(mag[nonzero])[nonzero.size // 2]]
    grad.reshape(-1)[k] *= 1 + 1e-4
    return loss, grad
