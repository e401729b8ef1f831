"""Cross-entropy with label smoothing (Szegedy et al. 2016; PyTorch's label_smoothing)."""
import numpy as np

import gradlab


def label_smoothing(logits, targets, epsilon=0.1):
    """logits (B, T, V), targets int (B, T) -> (loss, grad_logits (B, T, V)).

    The target distribution is y = (1 - epsilon) * one_hot(target) + epsilon / V; loss is the mean over
    the B*T positions of -sum_v y_v log softmax(logits)_v, and grad_logits = (softmax - y) / (B*T).
    epsilon = 0 is cross_entropy."""
    V = logits.shape[-1]
    z = logits.reshape(-1, V)                                   # (N, V), N = B*T
    t = np.asarray(targets).reshape(-1)                         # (N,)
    N = len(t)
    shifted = z - z.max(axis=-1, keepdims=True)                 # (N, V), stable
    log_probs = shifted - np.log(np.exp(shifted).sum(axis=-1, keepdims=True))
    y = np.full_like(log_probs, epsilon / V)                    # (N, V) smoothed one-hot
    y[np.arange(N), t] += 1 - epsilon
    loss = -(y * log_probs).sum() / N
    grad = (np.exp(log_probs) - y) / N                          # (N, V)
    return float(loss), grad.reshape(logits.shape)


gradlab.register("label_smoothing")(label_smoothing)
