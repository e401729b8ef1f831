"""range(0, T - chunk_size + 1, chunk_size): a last, shorter chunk is never computed."""
import numpy as np

import gradlab


@gradlab.register("chunked_attention")
def attend(Q, K, V, chunk_size, causal=False):
    T, dk = Q.shape[2], Q.shape[3]
    out = np.zeros(Q.shape)
    for i in range(0, T - chunk_size + 1, chunk_size):
        s = Q[:, :, i:i + chunk_size] @ K.transpose(0, 1, 3, 2) / np.sqrt(dk)
        if causal:
            s = np.where(np.arange(K.shape[2])[None, :] <= np.arange(i, i + chunk_size)[:, None], s, -np.inf)
        e = np.exp(s - s.max(-1, keepdims=True))
        out[:, :, i:i + chunk_size] = (e / e.sum(-1, keepdims=True)) @ V
    return out
