"""Article 000 §6.2's label_smoothing_loss (probabilities in, a sum out), registered
through the wrapper CONTRACT §3 documents: logits -> probabilities, ids -> one-hot,
the sum divided by the number of positions, and the gradient (softmax - y) / N."""
import numpy as np

import gradlab


def label_smoothing_loss(y_true, y_pred, epsilon=0.1):
    n_classes = y_pred.shape[-1]
    y_smooth = (1 - epsilon) * y_true + epsilon / n_classes
    return -np.sum(y_smooth * np.log(y_pred + 1e-10))


def softmax(x):
    e = np.exp(x - x.max(axis=-1, keepdims=True))
    return e / e.sum(axis=-1, keepdims=True)


@gradlab.register("label_smoothing")
def label_smoothing(logits, targets, epsilon=0.1):
    V, N = logits.shape[-1], targets.size
    probs = softmax(logits)
    y_true = np.eye(V)[targets]
    loss = label_smoothing_loss(y_true, probs, epsilon) / N
    grad = (probs - ((1 - epsilon) * y_true + epsilon / V)) / N
    return loss, grad
