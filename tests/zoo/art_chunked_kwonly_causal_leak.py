"""Chunks into a preallocated output, causal a keyword-only flag, and the mask off by one: each query also
sees the next key (j > i + 1 masked, not j > i)."""
import numpy as np

import gradlab


@gradlab.register("chunked_attention")
def attend(Q, K, V, chunk_size, *, causal=False):
    T, dk = Q.shape[2], Q.shape[3]
    out = np.zeros(Q.shape[:3] + V.shape[3:], dtype=np.result_type(Q, V))
    for start in range(0, T, chunk_size):
        q = Q[:, :, start:start + chunk_size]
        s = q @ K.transpose(0, 1, 3, 2) / np.sqrt(dk)
        if causal:
            keys, queries = np.arange(K.shape[2]), np.arange(start, start + q.shape[2])
            s = np.where(keys[None, :] > queries[:, None] + 1, -np.inf, s)       # BUG: + 1
        s = np.exp(s - s.max(-1, keepdims=True))
        out[:, :, start:start + q.shape[2]] = (s / s.sum(-1, keepdims=True)) @ V
    return out
