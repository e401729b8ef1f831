"""Attention with a "fast path" for a single head that forgets the
1/sqrt(d_k) scale. Right at the default sizes (H = 2); wrong only when
num_heads == 1, and only visible when d_k > 1 (the scale is 1 at d_k = 1) and
T > 1 (a single position's weight is 1 whatever the scale). `--explore` finds
it and shrinks it to B=1, T=2, H=1, d_model=2. Backward uses the scale forward
used, so only the `reference` check sees the bug. It borrows gradlab's softmax
helper (a file that imports a reference module must leave the reference whole)."""
import math

import numpy as np

import gradlab
from gradlab.modules.functional import softmax


class FastPathAttention:
    def __init__(self, d_model, num_heads, dtype="float64", seed=0):
        rng = np.random.default_rng(seed)
        D = d_model
        self.num_heads = num_heads
        self.params = {"qkv_weight": (rng.standard_normal((D, 3 * D)) / np.sqrt(D)).astype(dtype),
                       "qkv_bias": (0.1 * rng.standard_normal(3 * D)).astype(dtype),
                       "out_weight": (rng.standard_normal((D, D)) / np.sqrt(D)).astype(dtype),
                       "out_bias": (0.1 * rng.standard_normal(D)).astype(dtype)}
        self.grads = {k: np.zeros_like(v) for k, v in self.params.items()}

    def forward(self, x):
        p, H = self.params, self.num_heads
        B, T, D = x.shape
        dk = D // H
        self.x = x
        qkv = x @ p["qkv_weight"] + p["qkv_bias"]
        self.q, self.k, self.v = (a.reshape(B, T, H, dk).transpose(0, 2, 1, 3) for a in np.split(qkv, 3, axis=-1))
        self.scale = 1.0 if H == 1 else 1 / math.sqrt(dk)         # the bug: 1 / sqrt(d_k) for one head too
        scores = self.q @ self.k.transpose(0, 1, 3, 2) * self.scale
        scores = np.where(np.tril(np.ones((T, T), dtype=bool)), scores, -np.inf)
        self.attn_weights = softmax(scores, axis=-1)                # (B, H, T, T)
        self.ctx = (self.attn_weights @ self.v).transpose(0, 2, 1, 3).reshape(B, T, D)
        return self.ctx @ p["out_weight"] + p["out_bias"]

    def backward(self, g):
        p, H = self.params, self.num_heads
        B, T, D = g.shape
        dk = D // H
        A = self.attn_weights
        self.grads["out_weight"] = self.ctx.reshape(-1, D).T @ g.reshape(-1, D)
        self.grads["out_bias"] = g.reshape(-1, D).sum(0)
        dctx = (g @ p["out_weight"].T).reshape(B, T, H, dk).transpose(0, 2, 1, 3)
        dA = dctx @ self.v.transpose(0, 1, 3, 2)
        dv = A.transpose(0, 1, 3, 2) @ dctx
        ds = A * (dA - (dA * A).sum(-1, keepdims=True)) * self.scale
        dq, dkk = ds @ self.k, ds.transpose(0, 1, 3, 2) @ self.q
        dqkv = np.concatenate([a.transpose(0, 2, 1, 3).reshape(B, T, D) for a in (dq, dkk, dv)], -1)
        self.grads["qkv_weight"] = self.x.reshape(-1, D).T @ dqkv.reshape(-1, 3 * D)
        self.grads["qkv_bias"] = dqkv.reshape(-1, 3 * D).sum(0)
        return dqkv @ p["qkv_weight"].T


@gradlab.register("attention")
def build(cfg):
    return FastPathAttention(cfg.d_model, cfg.num_heads, dtype=cfg.dtype, seed=cfg.seed)
