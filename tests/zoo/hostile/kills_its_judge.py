"""Two kinds; the cross-entropy kills the process that judges it (the worker's parent) on its third call."""
import os
import signal

import numpy as np

import gradlab

calls = [0]


@gradlab.register("softmax")
def softmax(x, axis=-1):
    e = np.exp(x - x.max(axis=axis, keepdims=True))
    return e / e.sum(axis=axis, keepdims=True)


@gradlab.register("cross_entropy")
def cross_entropy(logits, targets, ignore_index=None):
    calls[0] += 1
    if calls[0] == 3:
        os.kill(os.getppid(), signal.SIGKILL)
    V = logits.shape[-1]
    p = softmax(logits).reshape(-1, V)
    t = targets.reshape(-1)
    keep = np.ones(t.shape, bool) if ignore_index is None else t != ignore_index
    rows = np.arange(t.size)[keep]
    loss = -np.log(p[rows, t[keep]]).sum() / max(keep.sum(), 1)
    grad = p * keep[:, None]
    grad[rows, t[keep]] -= 1
    return loss, (grad / max(keep.sum(), 1)).reshape(logits.shape)
