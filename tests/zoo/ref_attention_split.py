"""Correct: separate W_q, W_k, W_v as attributes with gradients in dW_q, ... (CONTRACT §2
attribute pairs), einsum everywhere, an additive -1e9 mask, and a param_map function that
copies the fused reference weights into the split ones in place."""
import math

import numpy as np

import gradlab


class SplitAttention:
    def __init__(self, D, H, dtype):
        rng = np.random.default_rng(7)
        self.H, self.dh = H, D // H
        for n in ("q", "k", "v", "o"):
            setattr(self, f"W_{n}", (rng.normal(size=(D, D)) / np.sqrt(D)).astype(dtype))
            setattr(self, f"b_{n}", np.zeros(D, dtype=dtype))

    def heads(self, a):
        B, T, D = a.shape
        return a.reshape(B, T, self.H, self.dh)

    def forward(self, x):
        B, T, D = x.shape
        self.x = x
        self.q, self.k, self.v = (self.heads(x @ getattr(self, f"W_{n}") + getattr(self, f"b_{n}")) for n in "qkv")
        s = np.einsum("bqhd,bkhd->bhqk", self.q, self.k) / math.sqrt(self.dh)
        s = s + np.triu(np.ones((T, T), dtype=x.dtype), 1) * -1e9
        e = np.exp(s - s.max(-1, keepdims=True))
        self.attn_weights = e / e.sum(-1, keepdims=True)
        self.ctx = np.einsum("bhqk,bkhd->bqhd", self.attn_weights, self.v).reshape(B, T, D)
        return self.ctx @ self.W_o + self.b_o

    def backward(self, g):
        B, T, D = g.shape
        self.dW_o = np.einsum("btd,bte->de", self.ctx, g)
        self.db_o = g.sum((0, 1))
        dctx = self.heads(g @ self.W_o.T)
        A = self.attn_weights
        dA = np.einsum("bqhd,bkhd->bhqk", dctx, self.v)
        dv = np.einsum("bhqk,bqhd->bkhd", A, dctx)
        ds = A * (dA - (A * dA).sum(-1, keepdims=True)) / math.sqrt(self.dh)
        dq = np.einsum("bhqk,bkhd->bqhd", ds, self.k).reshape(B, T, D)
        dk = np.einsum("bhqk,bqhd->bkhd", ds, self.q).reshape(B, T, D)
        dv = dv.reshape(B, T, D)
        dx = 0
        for n, d in (("q", dq), ("k", dk), ("v", dv)):
            setattr(self, f"dW_{n}", np.einsum("btd,bte->de", self.x, d))
            setattr(self, f"db_{n}", d.sum((0, 1)))
            dx = dx + d @ getattr(self, f"W_{n}").T
        return dx


def load(module, ref):
    W, b = ref["qkv_weight"], ref["qkv_bias"]
    D = W.shape[0]
    for i, n in enumerate("qkv"):
        getattr(module, f"W_{n}")[...] = W[:, i * D:(i + 1) * D]
        getattr(module, f"b_{n}")[...] = b[i * D:(i + 1) * D]
    module.W_o[...] = ref["out_weight"]
    module.b_o[...] = ref["out_bias"]


@gradlab.register("attention", param_map=load)
def build(cfg):
    return SplitAttention(cfg.d_model, cfg.num_heads, cfg.dtype)
