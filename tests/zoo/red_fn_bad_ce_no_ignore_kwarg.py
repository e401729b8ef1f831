"""Broken (contract): the seed article's cross_entropy_with_grad as is, with
no ignore_index parameter."""
import numpy as np

import gradlab


def cross_entropy_with_grad(logits, targets):
    batch_size, seq_len, vocab_size = logits.shape
    flat = logits.reshape(-1, vocab_size)
    labels = targets.reshape(-1)
    rows = np.arange(labels.size)

    shifted = flat - flat.max(axis=-1, keepdims=True)
    exp_logits = np.exp(shifted)
    normalizer = exp_logits.sum(axis=-1, keepdims=True)
    log_probs = shifted - np.log(normalizer)
    loss = -log_probs[rows, labels].mean()

    grad = exp_logits / normalizer
    grad[rows, labels] -= 1
    grad /= labels.size
    return loss, grad.reshape(batch_size, seq_len, vocab_size)


gradlab.register("cross_entropy")(cross_entropy_with_grad)
