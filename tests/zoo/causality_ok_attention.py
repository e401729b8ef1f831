"""A correct student attention, written differently from gradlab's reference:
einsum instead of matmul, a -1e9 mask instead of -inf, and attribute-style
parameters (qkv_weight with its gradient in dqkv_weight, ...).

Other zoo files subclass StudentAttention and change one method to plant one bug."""
import numpy as np

import gradlab


class StudentAttention:
    def __init__(self, d_model, num_heads, dtype="float64"):
        rng = np.random.default_rng(1)
        D = d_model
        self.h = num_heads
        self.qkv_weight = (rng.standard_normal((D, 3 * D)) / np.sqrt(D)).astype(dtype)
        self.qkv_bias = np.zeros(3 * D, dtype=dtype)
        self.out_weight = (rng.standard_normal((D, D)) / np.sqrt(D)).astype(dtype)
        self.out_bias = np.zeros(D, dtype=dtype)

    # --- the pieces variants override -------------------------------------
    def mask(self, scores):                      # scores (B, H, T, T)
        T = scores.shape[-1]
        future = np.triu(np.ones((T, T), dtype=bool), k=1)
        return np.where(future, -1e9, scores)

    def softmax(self, s):
        e = np.exp(s - s.max(axis=-1, keepdims=True))
        return e / e.sum(axis=-1, keepdims=True)

    def weights(self, scores):
        return self.softmax(self.mask(scores))

    def split(self, a):                          # (B, T, D) -> (B, H, T, dk)
        B, T, D = a.shape
        return a.reshape(B, T, self.h, D // self.h).transpose(0, 2, 1, 3)

    def merge(self, a):                          # (B, H, T, dk) -> (B, T, D)
        B, H, T, dk = a.shape
        return a.transpose(0, 2, 1, 3).reshape(B, T, H * dk)

    # --- forward / backward -----------------------------------------------
    def forward(self, x):
        self.x = x
        qkv = x @ self.qkv_weight + self.qkv_bias
        D = x.shape[-1]
        self.q, self.k, self.v = (self.split(qkv[..., i * D:(i + 1) * D]) for i in range(3))
        self.scale = 1.0 / np.sqrt(self.q.shape[-1])
        scores = np.einsum("bhqd,bhkd->bhqk", self.q, self.k) * self.scale
        self.attn_weights = self.weights(scores)
        self.ctx = self.merge(np.einsum("bhqk,bhkd->bhqd", self.attn_weights, self.v))
        return self.ctx @ self.out_weight + self.out_bias

    def backward(self, grad_out):
        A = self.attn_weights
        self.dout_weight = np.einsum("btd,bte->de", self.ctx, grad_out)
        self.dout_bias = grad_out.sum(axis=(0, 1))
        dctx = self.split(grad_out @ self.out_weight.T)
        dA = np.einsum("bhqd,bhkd->bhqk", dctx, self.v)
        dv = np.einsum("bhqk,bhqd->bhkd", A, dctx)
        ds = A * (dA - np.sum(dA * A, axis=-1, keepdims=True)) * self.scale
        dq = np.einsum("bhqk,bhkd->bhqd", ds, self.k)
        dk = np.einsum("bhqk,bhqd->bhkd", ds, self.q)
        dqkv = np.concatenate([self.merge(dq), self.merge(dk), self.merge(dv)], axis=-1)
        self.dqkv_weight = np.einsum("btd,bte->de", self.x, dqkv)
        self.dqkv_bias = dqkv.sum(axis=(0, 1))
        return dqkv @ self.qkv_weight.T


@gradlab.register("attention")
def build(cfg):
    return StudentAttention(cfg.d_model, cfg.num_heads, cfg.dtype)
