"""Broken: chunks collected in a list and concatenated, the loop stopping before the last, shorter chunk
(while i + chunk_size <= T): the output is shorter than Q."""
import numpy as np
import gradlab

def attention_by_chunks(Q, K, V, chunk_size, causal=False):
    """einsum; float32 inside when inputs are float32; list of chunks concatenated"""
    scale = 1.0 / np.sqrt(Q.shape[-1])
    T, S = Q.shape[-2], K.shape[-2]
    outs = []
    i = 0
    while i + chunk_size <= T:                                 # BUG: while i < T
        q = Q[..., i:i + chunk_size, :]
        s = np.einsum('bhqd,bhkd->bhqk', q, K) * scale
        if causal:
            qi = np.arange(i, i + q.shape[-2])
            s = np.where(np.arange(S)[None, :] > qi[:, None], -1e9, s)
        s -= s.max(-1, keepdims=True)
        w = np.exp(s)
        w /= w.sum(-1, keepdims=True)
        outs.append(np.einsum('bhqk,bhkd->bhqd', w, V))
        i += chunk_size
    return np.concatenate(outs, axis=-2)

gradlab.register("chunked_attention")(attention_by_chunks)
