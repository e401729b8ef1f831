"""The loss's uniform part sums -log p over the classes, epsilon * sum(-log p), where the contract takes
their mean (epsilon / V to each class); grad_logits is the contract's, so the gradient check sees the loss
and grad_logits disagree."""
import numpy as np

import gradlab


@gradlab.register("label_smoothing")
def label_smoothing(logits, targets, epsilon=0.1):
    V, N = logits.shape[-1], targets.size
    z = logits - logits.max(axis=-1, keepdims=True)
    logp = z - np.log(np.exp(z).sum(axis=-1, keepdims=True))
    nll = -np.take_along_axis(logp, targets[..., None], axis=-1).sum()
    loss = ((1 - epsilon) * nll + epsilon * -logp.sum()) / N              # BUG: epsilon / V * -logp.sum()
    y = (1 - epsilon) * np.eye(V)[targets] + epsilon / V
    return loss, (np.exp(logp) - y) / N
