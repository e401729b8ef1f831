"""The causal mask is made per chunk from np.triu of a (chunk, T) block: local row indices."""
import numpy as np

import gradlab


@gradlab.register("chunked_attention")
def attend(Q, K, V, chunk_size, causal=False):
    T, dk = Q.shape[2], Q.shape[3]
    out = np.zeros(Q.shape)
    for i in range(0, T, chunk_size):
        q = Q[:, :, i:i + chunk_size]
        s = q @ K.transpose(0, 1, 3, 2) / np.sqrt(dk)
        if causal:
            s = s - 1e9 * np.triu(np.ones((q.shape[2], K.shape[2])), k=1)
        e = np.exp(s - s.max(-1, keepdims=True))
        out[:, :, i:i + chunk_size] = (e / e.sum(-1, keepdims=True)) @ V
    return out
