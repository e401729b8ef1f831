"""Broken: the article's smoothed loss, but the gradient of plain cross-entropy (the hard one-hot target)."""
import numpy as np

import gradlab
from art_label_smoothing_ok_article import label_smoothing_loss, softmax


@gradlab.register("label_smoothing")
def label_smoothing(logits, targets, epsilon=0.1):
    V, N = logits.shape[-1], targets.size
    probs = softmax(logits)
    y_true = np.eye(V)[targets]
    loss = label_smoothing_loss(y_true, probs, epsilon) / N
    grad = (probs - y_true) / N                                    # BUG: y_true, not the smoothed target
    return loss, grad
