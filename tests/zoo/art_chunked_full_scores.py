"""Chunks in name only: the whole (T, T) score matrix is computed first, then sliced."""
import numpy as np

import gradlab


@gradlab.register("chunked_attention")
def attend(Q, K, V, chunk_size, causal=False):
    T, dk = Q.shape[2], Q.shape[3]
    scores = Q @ K.transpose(0, 1, 3, 2) / np.sqrt(dk)
    if causal:
        scores = np.where(np.tril(np.ones((T, K.shape[2]), bool)), scores, -np.inf)
    out = np.zeros(Q.shape)
    for i in range(0, T, chunk_size):
        s = scores[:, :, i:i + chunk_size]
        e = np.exp(s - s.max(-1, keepdims=True))
        out[:, :, i:i + chunk_size] = (e / e.sum(-1, keepdims=True)) @ V
    return out
