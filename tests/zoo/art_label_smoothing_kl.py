"""The KL divergence KL(y || p) = sum(y * (log y - log p)) as the loss: its gradient is the cross-entropy's,
its value short by the entropy of y."""
import numpy as np

import gradlab


@gradlab.register("label_smoothing")
def label_smoothing(logits, targets, epsilon=0.1):
    V, N = logits.shape[-1], targets.size
    z = logits - logits.max(axis=-1, keepdims=True)
    log_probs = z - np.log(np.exp(z).sum(axis=-1, keepdims=True))
    y = (1 - epsilon) * np.eye(V)[targets] + epsilon / V
    log_y = np.log(np.where(y > 0, y, 1.0))
    return (y * (log_y - log_probs)).sum() / N, (np.exp(log_probs) - y) / N
