"""Correct: einsum everywhere, fused qkv, -inf mask via np.where, heads kept as (B, T, H, d_k).

The red_mod_attention_* variants subclass CausalAttention and change one piece to plant one bug."""
import numpy as np

import gradlab


class CausalAttention:
    def __init__(self, cfg):
        rng = np.random.default_rng(cfg.seed + 1)
        D, dt = cfg.d_model, cfg.dtype
        self.H, self.dk = cfg.num_heads, D // cfg.num_heads
        self.params = {"qkv_weight": rng.normal(0, D ** -0.5, (D, 3 * D)).astype(dt),
                       "qkv_bias": rng.normal(0, 0.1, 3 * D).astype(dt),
                       "out_weight": rng.normal(0, D ** -0.5, (D, D)).astype(dt),
                       "out_bias": np.zeros(D, dt)}
        self.grads = {}

    # --- the pieces variants override -------------------------------------
    def scores(self, q, k):                      # q, k (B, T, H, d_k) -> (B, H, T, T)
        return np.einsum("bqhd,bkhd->bhqk", q, k) / np.sqrt(self.dk)

    def mask(self, scores):
        T = scores.shape[-1]
        causal = np.tril(np.ones((T, T), dtype=bool))
        return np.where(causal, scores, -np.inf)

    def softmax(self, scores):
        e = np.exp(scores - scores.max(axis=-1, keepdims=True))
        return e / e.sum(axis=-1, keepdims=True)

    def mix(self, A, v):                         # weights times values, (B, T, H, d_k)
        return np.einsum("bhqk,bkhd->bqhd", A, v)

    def merge(self, ctx):                        # (B, T, H, d_k) -> (B, T, D)
        B, T = ctx.shape[:2]
        return ctx.reshape(B, T, -1)

    def split(self, dctx):                       # (B, T, D) -> (B, T, H, d_k), merge's inverse
        B, T = dctx.shape[:2]
        return dctx.reshape(B, T, self.H, self.dk)

    def dscores(self, A, dA):                    # back through softmax and the 1/sqrt(d_k) scale
        return A * (dA - (A * dA).sum(axis=-1, keepdims=True)) / np.sqrt(self.dk)

    # --- forward / backward -------------------------------------------------
    def forward(self, x):
        B, T, D = x.shape
        P = self.params
        self.x = x
        qkv = np.einsum("btd,de->bte", x, P["qkv_weight"]) + P["qkv_bias"]
        q, k, v = (qkv[..., i * D:(i + 1) * D].reshape(B, T, self.H, self.dk) for i in range(3))
        self.q, self.k, self.v = q, k, v
        A = self.softmax(self.mask(self.scores(q, k)))
        self.attn_weights = A
        self.ctx = self.merge(self.mix(A, v))
        return np.einsum("btd,de->bte", self.ctx, P["out_weight"]) + P["out_bias"]

    def backward(self, dout):
        B, T, D = dout.shape
        P, A = self.params, self.attn_weights
        self.grads["out_weight"] = np.einsum("btd,bte->de", self.ctx, dout)
        self.grads["out_bias"] = dout.sum(axis=(0, 1))
        dctx = self.split(dout @ P["out_weight"].T)
        dA = np.einsum("bqhd,bkhd->bhqk", dctx, self.v)
        dv = np.einsum("bhqk,bqhd->bkhd", A, dctx)
        dscores = self.dscores(A, dA)
        dq = np.einsum("bhqk,bkhd->bqhd", dscores, self.k)
        dk = np.einsum("bhqk,bqhd->bkhd", dscores, self.q)
        dqkv = np.concatenate([t.reshape(B, T, D) for t in (dq, dk, dv)], axis=-1)
        self.grads["qkv_weight"] = np.einsum("btd,bte->de", self.x, dqkv)
        self.grads["qkv_bias"] = dqkv.sum(axis=(0, 1))
        return dqkv @ P["qkv_weight"].T


@gradlab.register("attention")
def build(cfg):
    return CausalAttention(cfg)
