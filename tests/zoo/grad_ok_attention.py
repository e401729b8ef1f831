"""A correct student attention, params/grads dicts with the contract's names,
matmul and a -inf causal mask. The other grad_*attention* files subclass it and
change one piece to plant one bug (or to write the same maths another way)."""
import numpy as np

import gradlab


class StudentAttention:
    def __init__(self, d_model, num_heads, dtype="float64"):
        rng = np.random.default_rng(0)
        D = d_model
        self.h = num_heads
        self.params = {"qkv_weight": (rng.standard_normal((D, 3 * D)) / np.sqrt(D)).astype(dtype),
                       "qkv_bias": np.zeros(3 * D, dtype=dtype),
                       "out_weight": (rng.standard_normal((D, D)) / np.sqrt(D)).astype(dtype),
                       "out_bias": np.zeros(D, dtype=dtype)}
        self.grads = {}

    def split(self, a):                          # (B, T, D) -> (B, H, T, dk)
        B, T, D = a.shape
        return a.reshape(B, T, self.h, D // self.h).transpose(0, 2, 1, 3)

    def merge(self, a):                          # (B, H, T, dk) -> (B, T, D)
        B, H, T, dk = a.shape
        return a.transpose(0, 2, 1, 3).reshape(B, T, H * dk)

    def mask(self, scores):
        T = scores.shape[-1]
        return np.where(np.tril(np.ones((T, T), dtype=bool)), scores, -np.inf)

    def scores(self, q, k):
        return q @ k.transpose(0, 1, 3, 2) * self.scale

    def softmax_backward(self, A, dA):
        return A * (dA - (dA * A).sum(axis=-1, keepdims=True))

    def scores_backward(self, A, dA):            # d loss / d (q k^T), through softmax and the scale
        return self.softmax_backward(A, dA) * self.scale

    def forward(self, x):
        p = self.params
        self.x = x
        D = x.shape[-1]
        qkv = x @ p["qkv_weight"] + p["qkv_bias"]
        self.q, self.k, self.v = (self.split(qkv[..., i * D:(i + 1) * D]) for i in range(3))
        self.scale = 1.0 / np.sqrt(self.q.shape[-1])
        s = self.mask(self.scores(self.q, self.k))
        e = np.exp(s - s.max(axis=-1, keepdims=True))
        self.attn_weights = e / e.sum(axis=-1, keepdims=True)
        self.ctx = self.merge(self.attn_weights @ self.v)
        return self.ctx @ p["out_weight"] + p["out_bias"]

    def out_weight_grad(self, grad_out):
        D = grad_out.shape[-1]
        return self.ctx.reshape(-1, D).T @ grad_out.reshape(-1, D)

    def backward(self, grad_out):
        p, A = self.params, self.attn_weights
        D = grad_out.shape[-1]
        self.grads["out_weight"] = self.out_weight_grad(grad_out)
        self.grads["out_bias"] = grad_out.reshape(-1, D).sum(axis=0)
        dctx = self.split(grad_out @ p["out_weight"].T)
        dA = dctx @ self.v.transpose(0, 1, 3, 2)
        dv = A.transpose(0, 1, 3, 2) @ dctx
        ds = self.scores_backward(A, dA)
        dq = ds @ self.k
        dk = ds.transpose(0, 1, 3, 2) @ self.q
        dqkv = np.concatenate([self.merge(dq), self.merge(dk), self.merge(dv)], axis=-1)
        self.grads["qkv_weight"] = self.x.reshape(-1, D).T @ dqkv.reshape(-1, 3 * D)
        self.grads["qkv_bias"] = dqkv.reshape(-1, 3 * D).sum(axis=0)
        return dqkv @ p["qkv_weight"].T


@gradlab.register("attention")
def build(cfg):
    return StudentAttention(cfg.d_model, cfg.num_heads, cfg.dtype)
