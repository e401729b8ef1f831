"""A causal attention with one quiet bug: the gradient of out_weight is
transposed. out_weight is square (D, D), so the shape is right and nothing
crashes; only the numbers are wrong. gradlab's gradient check catches it and
names the parameter.

Run it (exit status 1, the message names 'out_weight'):
    gradlab check attention --impl examples/broken_attention.py --checks gradient
"""
import numpy as np

import gradlab


class Attention:
    def __init__(self, d_model, num_heads, dtype="float64"):
        rng = np.random.default_rng(0)
        D = d_model
        self.h = num_heads
        self.params = {
            "qkv_weight": (rng.standard_normal((D, 3 * D)) / np.sqrt(D)).astype(dtype),
            "qkv_bias": np.zeros(3 * D, dtype=dtype),
            "out_weight": (rng.standard_normal((D, D)) / np.sqrt(D)).astype(dtype),
            "out_bias": np.zeros(D, dtype=dtype),
        }
        self.grads = {}

    def heads(self, a):                      # (B, T, D) -> (B, H, T, dk)
        B, T, D = a.shape
        return a.reshape(B, T, self.h, D // self.h).transpose(0, 2, 1, 3)

    def unheads(self, a):                    # (B, H, T, dk) -> (B, T, D)
        B, H, T, dk = a.shape
        return a.transpose(0, 2, 1, 3).reshape(B, T, H * dk)

    def forward(self, x):
        p = self.params
        B, T, D = x.shape
        self.x = x
        q, k, v = np.split(x @ p["qkv_weight"] + p["qkv_bias"], 3, axis=-1)
        self.q, self.k, self.v = self.heads(q), self.heads(k), self.heads(v)
        self.scale = 1 / np.sqrt(D // self.h)
        s = self.q @ self.k.transpose(0, 1, 3, 2) * self.scale
        s = np.where(np.tril(np.ones((T, T), bool)), s, -np.inf)
        e = np.exp(s - s.max(-1, keepdims=True))
        self.attn_weights = e / e.sum(-1, keepdims=True)
        self.ctx = self.unheads(self.attn_weights @ self.v)
        return self.ctx @ p["out_weight"] + p["out_bias"]

    def backward(self, dout):
        p = self.params
        D = dout.shape[-1]
        # BUG: should be ctx.T @ dout; this is its transpose, same shape (D, D)
        self.grads["out_weight"] = dout.reshape(-1, D).T @ self.ctx.reshape(-1, D)
        self.grads["out_bias"] = dout.reshape(-1, D).sum(0)
        dctx = self.heads(dout @ p["out_weight"].T)
        A = self.attn_weights
        dA = dctx @ self.v.transpose(0, 1, 3, 2)
        dv = A.transpose(0, 1, 3, 2) @ dctx
        ds = A * (dA - (dA * A).sum(-1, keepdims=True)) * self.scale
        dq, dk = ds @ self.k, ds.transpose(0, 1, 3, 2) @ self.q
        dqkv = np.concatenate([self.unheads(a) for a in (dq, dk, dv)], axis=-1)
        self.grads["qkv_weight"] = self.x.reshape(-1, D).T @ dqkv.reshape(-1, 3 * D)
        self.grads["qkv_bias"] = dqkv.reshape(-1, 3 * D).sum(0)
        return dqkv @ p["qkv_weight"].T


@gradlab.register("attention")
def build(cfg):
    return Attention(cfg.d_model, cfg.num_heads, dtype=cfg.dtype)
