"""A student's causal multi-head self-attention, written only against
gradlab's plug-in contract (CONTRACT.md), the way a course assignment would.

It keeps separate W_q, W_k, W_v matrices as plain attributes, with the
gradients in dW_q, dW_k, ... after backward (CONTRACT §2, attribute pairs).
gradlab's reference uses one fused qkv_weight, so the file registers a
param_map function that copies the reference weights into the split ones.

Run it:
    gradlab check attention --impl examples/student_attention.py
    gradlab check attention --impl examples/student_attention.py --checks gradient -v
"""
import numpy as np

import gradlab


class MultiHeadAttention:
    def __init__(self, d_model, n_heads, seed=0, dtype="float64"):
        rng = np.random.default_rng(seed)
        D = d_model
        self.n_heads = n_heads
        self.d_head = D // n_heads
        scale = 1 / np.sqrt(D)
        self.W_q = (rng.normal(size=(D, D)) * scale).astype(dtype)
        self.W_k = (rng.normal(size=(D, D)) * scale).astype(dtype)
        self.W_v = (rng.normal(size=(D, D)) * scale).astype(dtype)
        self.b_q = np.zeros(D, dtype=dtype)
        self.b_k = np.zeros(D, dtype=dtype)
        self.b_v = np.zeros(D, dtype=dtype)
        self.W_o = (rng.normal(size=(D, D)) * scale).astype(dtype)
        self.b_o = np.zeros(D, dtype=dtype)

    def split(self, a):
        # (B, T, D) -> (B, H, T, d_head)
        B, T, _ = a.shape
        return a.reshape(B, T, self.n_heads, self.d_head).transpose(0, 2, 1, 3)

    def merge(self, a):
        # (B, H, T, d_head) -> (B, T, D)
        B, H, T, dh = a.shape
        return a.transpose(0, 2, 1, 3).reshape(B, T, H * dh)

    def forward(self, x):
        self.x = x
        T = x.shape[1]
        self.q = self.split(x @ self.W_q + self.b_q)
        self.k = self.split(x @ self.W_k + self.b_k)
        self.v = self.split(x @ self.W_v + self.b_v)
        scores = np.einsum("bhqd,bhkd->bhqk", self.q, self.k) / np.sqrt(self.d_head)
        mask = np.triu(np.ones((T, T)), k=1) * -1e9          # additive mask on the future
        scores = scores + mask
        scores = scores - scores.max(axis=-1, keepdims=True)
        e = np.exp(scores)
        self.attn_weights = e / e.sum(axis=-1, keepdims=True)
        self.ctx = self.merge(np.einsum("bhqk,bhkd->bhqd", self.attn_weights, self.v))
        return self.ctx @ self.W_o + self.b_o

    def backward(self, dout):
        D = dout.shape[-1]
        self.dW_o = self.ctx.reshape(-1, D).T @ dout.reshape(-1, D)
        self.db_o = dout.reshape(-1, D).sum(axis=0)
        dctx = self.split(dout @ self.W_o.T)
        A = self.attn_weights
        dA = np.einsum("bhqd,bhkd->bhqk", dctx, self.v)
        dv = np.einsum("bhqk,bhqd->bhkd", A, dctx)
        dscores = A * (dA - (A * dA).sum(axis=-1, keepdims=True)) / np.sqrt(self.d_head)
        dq = np.einsum("bhqk,bhkd->bhqd", dscores, self.k)
        dk = np.einsum("bhqk,bhqd->bhkd", dscores, self.q)
        dq, dk, dv = self.merge(dq), self.merge(dk), self.merge(dv)
        x2 = self.x.reshape(-1, D)
        self.dW_q = x2.T @ dq.reshape(-1, D)
        self.dW_k = x2.T @ dk.reshape(-1, D)
        self.dW_v = x2.T @ dv.reshape(-1, D)
        self.db_q = dq.reshape(-1, D).sum(axis=0)
        self.db_k = dk.reshape(-1, D).sum(axis=0)
        self.db_v = dv.reshape(-1, D).sum(axis=0)
        return dq @ self.W_q.T + dk @ self.W_k.T + dv @ self.W_v.T


def load_reference(module, ref):
    """Copy gradlab's fused reference weights into the split ones (in place)."""
    D = module.W_q.shape[0]
    W, b = ref["qkv_weight"], ref["qkv_bias"]
    module.W_q[...], module.W_k[...], module.W_v[...] = W[:, :D], W[:, D:2 * D], W[:, 2 * D:]
    module.b_q[...], module.b_k[...], module.b_v[...] = b[:D], b[D:2 * D], b[2 * D:]
    module.W_o[...] = ref["out_weight"]
    module.b_o[...] = ref["out_bias"]


@gradlab.register("attention", param_map=load_reference)
def build(cfg):
    return MultiHeadAttention(cfg.d_model, cfg.num_heads, seed=cfg.seed, dtype=cfg.dtype)
