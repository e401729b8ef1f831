"""Broken: backward computes dV as A @ dctx (einsum over the wrong time index);
the attention weights must be transposed: dV = A^T @ dctx."""
import numpy as np

import gradlab


class CausalAttention:
    def __init__(self, cfg):
        rng = np.random.default_rng(cfg.seed + 5)
        D, dt = cfg.d_model, cfg.dtype
        self.H, self.dk = cfg.num_heads, D // cfg.num_heads
        self.params = {"qkv_weight": rng.normal(0, D ** -0.5, (D, 3 * D)).astype(dt),
                       "qkv_bias": rng.normal(0, 0.1, 3 * D).astype(dt),
                       "out_weight": rng.normal(0, D ** -0.5, (D, D)).astype(dt),
                       "out_bias": np.zeros(D, dt)}
        self.grads = {}

    def forward(self, x):
        B, T, D = x.shape
        P = self.params
        self.x = x
        qkv = np.einsum("btd,de->bte", x, P["qkv_weight"]) + P["qkv_bias"]
        q, k, v = (qkv[..., i * D:(i + 1) * D].reshape(B, T, self.H, self.dk) for i in range(3))
        self.q, self.k, self.v = q, k, v
        scores = np.einsum("bqhd,bkhd->bhqk", q, k) / np.sqrt(self.dk)
        scores = np.where(np.tril(np.ones((T, T), dtype=bool)), scores, -1e9)
        e = np.exp(scores - scores.max(axis=-1, keepdims=True))
        self.attn_weights = e / e.sum(axis=-1, keepdims=True)
        self.ctx = np.einsum("bhqk,bkhd->bqhd", self.attn_weights, v).reshape(B, T, D)
        return np.einsum("btd,de->bte", self.ctx, P["out_weight"]) + P["out_bias"]

    def backward(self, dout):
        B, T, D = dout.shape
        P, A = self.params, self.attn_weights
        self.grads["out_weight"] = np.einsum("btd,bte->de", self.ctx, dout)
        self.grads["out_bias"] = dout.sum(axis=(0, 1))
        dctx = (dout @ P["out_weight"].T).reshape(B, T, self.H, self.dk)
        dA = np.einsum("bqhd,bkhd->bhqk", dctx, self.v)
        dv = np.einsum("bhqk,bkhd->bqhd", A, dctx)   # BUG: "bhqk,bqhd->bkhd" (A transposed)
        ds = A * (dA - (A * dA).sum(-1, keepdims=True)) / np.sqrt(self.dk)
        dq = np.einsum("bhqk,bkhd->bqhd", ds, self.k)
        dk = np.einsum("bhqk,bqhd->bkhd", ds, self.q)
        dqkv = np.concatenate([t.reshape(B, T, D) for t in (dq, dk, dv)], axis=-1)
        self.grads["qkv_weight"] = np.einsum("btd,bte->de", self.x, dqkv)
        self.grads["qkv_bias"] = dqkv.sum(axis=(0, 1))
        return dqkv @ P["qkv_weight"].T


@gradlab.register("attention")
def build(cfg):
    return CausalAttention(cfg)
