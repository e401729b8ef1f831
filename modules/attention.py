"""Causal multi-head self-attention with a fused QKV projection."""
import math

import numpy as np

import gradlab

from .functional import softmax


class CausalSelfAttention:
    """x (B, T, D) -> (B, T, D). Position t attends to positions <= t only.

    qkv_weight (D, 3D): columns [Q | K | V], heads contiguous inside each
    (head h of Q is columns h*d_k:(h+1)*d_k). Keeps attn_weights (B, H, T, T)."""

    def __init__(self, d_model, num_heads, dtype="float64", seed=0):
        assert d_model % num_heads == 0, f"d_model={d_model} must be divisible by num_heads={num_heads}"
        rng = np.random.default_rng(seed)
        D = d_model
        self.num_heads = num_heads
        self.params = {
            "qkv_weight": (rng.standard_normal((D, 3 * D)) / np.sqrt(D)).astype(dtype),
            "qkv_bias": (0.1 * rng.standard_normal(3 * D)).astype(dtype),
            "out_weight": (rng.standard_normal((D, D)) / np.sqrt(D)).astype(dtype),
            "out_bias": (0.1 * rng.standard_normal(D)).astype(dtype),
        }
        self.grads = {k: np.zeros_like(v) for k, v in self.params.items()}

    def _split_heads(self, x):          # (B, T, D) -> (B, H, T, d_k)
        B, T, D = x.shape
        return x.reshape(B, T, self.num_heads, D // self.num_heads).transpose(0, 2, 1, 3)

    def _merge_heads(self, x):          # (B, H, T, d_k) -> (B, T, D)
        B, H, T, dk = x.shape
        return x.transpose(0, 2, 1, 3).reshape(B, T, H * dk)

    def forward(self, x):                                           # x (B, T, D)
        p = self.params
        T = x.shape[1]
        self.x = x
        qkv = x @ p["qkv_weight"] + p["qkv_bias"]                   # (B, T, 3D)
        q, k, v = (self._split_heads(a) for a in np.split(qkv, 3, axis=-1))   # each (B, H, T, d_k)
        self.scale = 1 / math.sqrt(q.shape[-1])                     # Python float: keeps the dtype
        scores = q @ k.transpose(0, 1, 3, 2) * self.scale           # (B, H, T, T)
        causal = np.tril(np.ones((T, T), dtype=bool))               # (T, T), True where key <= query
        scores = np.where(causal, scores, -np.inf)                  # the future gets exactly 0 weight
        self.attn_weights = softmax(scores, axis=-1)                # (B, H, T, T)
        self.q, self.k, self.v = q, k, v
        self.ctx = self._merge_heads(self.attn_weights @ v)         # (B, H, T, d_k) -> (B, T, D)
        return self.ctx @ p["out_weight"] + p["out_bias"]           # (B, T, D)

    def backward(self, grad_out):                                   # grad_out (B, T, D)
        p = self.params
        D = grad_out.shape[-1]
        A, q, k, v = self.attn_weights, self.q, self.k, self.v
        self.grads["out_weight"] = self.ctx.reshape(-1, D).T @ grad_out.reshape(-1, D)   # (D, D)
        self.grads["out_bias"] = grad_out.reshape(-1, D).sum(axis=0)                    # (D,)
        dctx = self._split_heads(grad_out @ p["out_weight"].T)      # (B, H, T, d_k)
        dA = dctx @ v.transpose(0, 1, 3, 2)                         # (B, H, T, T)
        dv = A.transpose(0, 1, 3, 2) @ dctx                         # (B, H, T, d_k)
        # softmax vector-Jacobian product, row by row: A * (dA - sum(dA * A)).
        # Masked entries have A = 0, so no gradient flows to the future.
        dscores = A * (dA - (dA * A).sum(axis=-1, keepdims=True)) * self.scale   # (B, H, T, T)
        dq = dscores @ k                                            # (B, H, T, d_k)
        dk = dscores.transpose(0, 1, 3, 2) @ q                      # (B, H, T, d_k)
        dqkv = np.concatenate([self._merge_heads(a) for a in (dq, dk, dv)], axis=-1)   # (B, T, 3D)
        self.grads["qkv_weight"] = self.x.reshape(-1, D).T @ dqkv.reshape(-1, 3 * D)  # (D, 3D)
        # its K third is 0 up to rounding: a K bias adds the same q.b_k to a whole row of scores
        self.grads["qkv_bias"] = dqkv.reshape(-1, 3 * D).sum(axis=0)                   # (3D,)
        return dqkv @ p["qkv_weight"].T                             # (B, T, D)


@gradlab.register("attention")
def build(cfg):
    return CausalSelfAttention(cfg.d_model, cfg.num_heads, dtype=cfg.dtype, seed=cfg.seed)
