"""Broken in the smallest way, beside a sound idiom: the log(p + eps) label smoothing (eps 1e-7, on every
class) whose grad_logits is off by a relative 1e-4 in its median-magnitude element (as
tol_bad_ce_log_eps_one_element.py)."""
import numpy as np

import gradlab
from tol_ok_ls_log_eps import label_smoothing as sound


@gradlab.register("label_smoothing")
def label_smoothing(logits, targets, epsilon=0.1):
    loss, grad = sound(logits, targets, epsilon, eps=1e-7)
    mag = np.abs(grad).reshape(-1)
    k = np.argsort(mag)[mag.size // 2]
    grad.reshape(-1)[k] *= 1 + 1e-4
    return loss, grad
