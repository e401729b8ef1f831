"""Memory-efficient attention (article 000 §7.1): the queries in chunks."""
import math

import numpy as np

import gradlab

from .functional import softmax


def chunked_attention(Q, K, V, chunk_size, causal=False):
    """Q (B, H, T, d_k), K, V (B, H, S, d_k) -> softmax(Q K^T / sqrt(d_k)) V (B, H, T, d_k), computed
    chunk_size queries at a time: the scores held at once are (B, H, chunk_size, S), not (B, H, T, S).
    causal: query i sees keys j <= i, by global positions (a chunk starting at `start` masks j > start + r)."""
    B, H, T, dk = Q.shape
    S = K.shape[2]
    out = np.empty((B, H, T, V.shape[-1]), dtype=np.result_type(Q, K, V))
    for start in range(0, T, chunk_size):
        q = Q[:, :, start:start + chunk_size]                   # (B, H, c, d_k), the last chunk may be short
        scores = q @ K.transpose(0, 1, 3, 2) / math.sqrt(dk)    # (B, H, c, S)
        if causal:
            rows = np.arange(start, start + q.shape[2])[:, None]   # global query positions (c, 1)
            scores = np.where(np.arange(S)[None, :] <= rows, scores, -np.inf)
        out[:, :, start:start + chunk_size] = softmax(scores, axis=-1) @ V
    return out


gradlab.register("chunked_attention")(chunked_attention)
