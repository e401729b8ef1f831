"""Broken: backward computes dK like dQ, dscores @ q, without transposing dscores
(T x T, so the shapes fit either way)."""
import numpy as np

import gradlab


class Attention:
    def __init__(self, cfg):
        rng = np.random.default_rng(cfg.seed)
        D, dt = cfg.d_model, cfg.dtype
        self.n_heads = cfg.num_heads
        self.params = {"qkv_weight": (rng.standard_normal((D, 3 * D)) / np.sqrt(D)).astype(dt),
                       "qkv_bias": np.zeros(3 * D, dt),
                       "out_weight": (rng.standard_normal((D, D)) / np.sqrt(D)).astype(dt),
                       "out_bias": np.zeros(D, dt)}
        self.grads = {}

    def split(self, a):
        B, T, D = a.shape
        return a.reshape(B, T, self.n_heads, -1).transpose(0, 2, 1, 3)

    def merge(self, a):
        B, H, T, d = a.shape
        return a.transpose(0, 2, 1, 3).reshape(B, T, H * d)

    def forward(self, x):
        T = x.shape[1]
        self.x = x
        qkv = x @ self.params["qkv_weight"] + self.params["qkv_bias"]
        self.q, self.k, self.v = (self.split(a) for a in np.split(qkv, 3, axis=-1))
        self.scale = 1.0 / np.sqrt(self.q.shape[-1])
        s = self.q @ self.k.transpose(0, 1, 3, 2) * self.scale
        s = np.where(np.tril(np.ones((T, T), bool)), s, -np.inf)
        s = np.exp(s - s.max(-1, keepdims=True))
        self.attn_weights = s / s.sum(-1, keepdims=True)
        self.ctx = self.merge(self.attn_weights @ self.v)
        return self.ctx @ self.params["out_weight"] + self.params["out_bias"]

    def backward(self, dout):
        D = dout.shape[-1]
        A = self.attn_weights
        self.grads["out_weight"] = self.ctx.reshape(-1, D).T @ dout.reshape(-1, D)
        self.grads["out_bias"] = dout.reshape(-1, D).sum(0)
        dctx = self.split(dout @ self.params["out_weight"].T)
        dA = dctx @ self.v.transpose(0, 1, 3, 2)
        dv = A.transpose(0, 1, 3, 2) @ dctx
        ds = A * (dA - (A * dA).sum(-1, keepdims=True)) * self.scale
        dq = ds @ self.k
        dk = ds @ self.q                      # BUG: should be ds.transpose(0, 1, 3, 2) @ self.q
        dqkv = np.concatenate([self.merge(a) for a in (dq, dk, dv)], axis=-1)
        self.grads["qkv_weight"] = self.x.reshape(-1, D).T @ dqkv.reshape(-1, 3 * D)
        self.grads["qkv_bias"] = dqkv.reshape(-1, 3 * D).sum(0)
        return dqkv @ self.params["qkv_weight"].T


@gradlab.register("attention")
def build(cfg):
    return Attention(cfg)
