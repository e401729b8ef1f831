"""Correct (a sound idiom): label smoothing in article 000's probability form, -sum(y * log(p + eps)) / N
with the guard on every class (EPS: the tests write copies with 1e-12 ... 1e-7). grad_logits is the exact
(softmax - y) / N."""
import numpy as np

import gradlab

EPS = 1e-10


@gradlab.register("label_smoothing")
def label_smoothing(logits, targets, epsilon=0.1, eps=None):
    eps = EPS if eps is None else eps
    V = logits.shape[-1]
    z = logits.reshape(-1, V)
    e = np.exp(z - z.max(axis=1, keepdims=True))
    p = e / e.sum(axis=1, keepdims=True)
    y = np.full(p.shape, epsilon / V)
    y[np.arange(len(p)), targets.reshape(-1)] += 1 - epsilon
    loss = -np.sum(y * np.log(p + eps)) / len(p)
    return loss, ((p - y) / len(p)).reshape(logits.shape)
