"""Multi-head cross-attention: decoder queries over the encoder's memory, with a key padding mask."""
import math

import numpy as np

import gradlab


def masked_softmax(scores, padded):
    """softmax over the last axis with padded keys (True in `padded`, broadcast) at exactly 0. A row whose
    keys are all padded has nothing to attend to: it gets all-zero weights (no NaN), so its context is 0."""
    scores = np.where(padded, -np.inf, scores)
    top = scores.max(axis=-1, keepdims=True)
    e = np.exp(scores - np.where(np.isfinite(top), top, 0))    # exp(-inf) = 0 at padded keys
    total = e.sum(axis=-1, keepdims=True)
    return e / np.where(total > 0, total, 1)


class CrossAttention:
    """forward(x (B, T, D), memory (B, S, D), key_padding_mask (B, S) bool or None) -> (B, T, D);
    backward(g) -> (dx, dmemory). q_weight (D, D), kv_weight (D, 2D) (columns K | V, heads contiguous),
    out_weight (D, D), and their biases. Keeps attn_weights (B, H, T, S)."""

    def __init__(self, d_model, num_heads, dtype="float64", seed=0):
        rng = np.random.default_rng(seed)
        D = d_model
        self.H = num_heads
        self.params = {
            "q_weight": (rng.standard_normal((D, D)) / np.sqrt(D)).astype(dtype),
            "q_bias": (0.1 * rng.standard_normal(D)).astype(dtype),
            "kv_weight": (rng.standard_normal((D, 2 * D)) / np.sqrt(D)).astype(dtype),
            "kv_bias": (0.1 * rng.standard_normal(2 * D)).astype(dtype),
            "out_weight": (rng.standard_normal((D, D)) / np.sqrt(D)).astype(dtype),
            "out_bias": (0.1 * rng.standard_normal(D)).astype(dtype),
        }
        self.grads = {k: np.zeros_like(v) for k, v in self.params.items()}

    def _split(self, a):                            # (B, L, D) -> (B, H, L, d_k)
        B, L, D = a.shape
        return a.reshape(B, L, self.H, D // self.H).transpose(0, 2, 1, 3)

    def _merge(self, a):                            # (B, H, L, d_k) -> (B, L, D)
        B, H, L, dk = a.shape
        return a.transpose(0, 2, 1, 3).reshape(B, L, H * dk)

    def forward(self, x, memory, key_padding_mask=None):
        p = self.params
        self.x, self.memory = x, memory
        q = self._split(x @ p["q_weight"] + p["q_bias"])                       # (B, H, T, d_k)
        k, v = (self._split(a) for a in np.split(memory @ p["kv_weight"] + p["kv_bias"], 2, axis=-1))   # (B, H, S, d_k)
        self.scale = 1 / math.sqrt(q.shape[-1])
        scores = q @ k.transpose(0, 1, 3, 2) * self.scale                     # (B, H, T, S)
        padded = np.zeros(scores.shape[-1], bool) if key_padding_mask is None else \
            np.asarray(key_padding_mask, bool)[:, None, None, :]              # (B, 1, 1, S)
        self.attn_weights = masked_softmax(scores, padded)                    # (B, H, T, S)
        self.q, self.k, self.v = q, k, v
        self.ctx = self._merge(self.attn_weights @ v)                         # (B, T, D)
        return self.ctx @ p["out_weight"] + p["out_bias"]

    def backward(self, grad_out):                   # grad_out (B, T, D) -> (dx, dmemory)
        p, gr = self.params, self.grads
        D = grad_out.shape[-1]
        flat = lambda a: a.reshape(-1, a.shape[-1])                            # noqa: E731
        A = self.attn_weights
        gr["out_weight"], gr["out_bias"] = flat(self.ctx).T @ flat(grad_out), flat(grad_out).sum(0)
        dctx = self._split(grad_out @ p["out_weight"].T)                      # (B, H, T, d_k)
        dA = dctx @ self.v.transpose(0, 1, 3, 2)                              # (B, H, T, S)
        dv = A.transpose(0, 1, 3, 2) @ dctx                                   # (B, H, S, d_k): 0 at padded keys
        dscores = A * (dA - (dA * A).sum(-1, keepdims=True)) * self.scale    # 0 where A is 0
        dq = self._merge(dscores @ self.k)                                    # (B, T, D)
        dkv = np.concatenate([self._merge(dscores.transpose(0, 1, 3, 2) @ self.q), self._merge(dv)], axis=-1)
        gr["q_weight"], gr["q_bias"] = flat(self.x).T @ flat(dq), flat(dq).sum(0)
        gr["kv_weight"], gr["kv_bias"] = flat(self.memory).T @ flat(dkv), flat(dkv).sum(0)
        assert dq.shape[-1] == D
        return dq @ p["q_weight"].T, dkv @ p["kv_weight"].T                   # (B, T, D), (B, S, D)


@gradlab.register("cross_attention")
def build(cfg):
    return CrossAttention(cfg.d_model, cfg.num_heads, dtype=cfg.dtype, seed=cfg.seed)
