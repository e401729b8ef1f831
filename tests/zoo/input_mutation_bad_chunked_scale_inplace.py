"""Broken (one bug): chunked attention that scales the caller's Q in place before chunking."""
import numpy as np

import gradlab


@gradlab.register("chunked_attention")
def chunked(Q, K, V, chunk_size, causal=False):
    Q /= np.sqrt(Q.shape[-1])                                   # BUG: the caller's Q changes
    T = Q.shape[-2]
    out = np.empty(Q.shape[:-1] + V.shape[-1:], dtype=np.result_type(Q, V))
    for start in range(0, T, chunk_size):
        s = Q[..., start:start + chunk_size, :] @ np.swapaxes(K, -1, -2)
        if causal:
            rows = np.arange(start, min(start + chunk_size, T))[:, None]
            s = np.where(np.arange(K.shape[-2])[None, :] > rows, -np.inf, s)
        w = np.exp(s - s.max(axis=-1, keepdims=True))
        out[..., start:start + chunk_size, :] = (w / w.sum(axis=-1, keepdims=True)) @ V
    return out
