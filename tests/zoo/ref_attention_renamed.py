"""Correct, with its own parameter names and no param_map: every shape is
different, so gradlab can match them by shape. Attribute-style gradients."""
import math

import numpy as np

import gradlab


class Attn:
    def __init__(self, d, h, dtype):
        rng = np.random.default_rng(3)
        self.h = h
        self.W_qkv = (rng.normal(size=(d, 3 * d)) / math.sqrt(d)).astype(dtype)
        self.b_qkv = np.zeros(3 * d, dtype=dtype)
        self.W_out = (rng.normal(size=(d, d)) / math.sqrt(d)).astype(dtype)
        self.b_out = np.zeros(d, dtype=dtype)

    def heads(self, a):
        B, T, D = a.shape
        return a.reshape(B, T, self.h, D // self.h).transpose(0, 2, 1, 3)

    def forward(self, x):
        B, T, D = x.shape
        self.x = x
        q, k, v = (self.heads(a) for a in np.split(x @ self.W_qkv + self.b_qkv, 3, axis=-1))
        s = q @ k.transpose(0, 1, 3, 2) / math.sqrt(D // self.h)
        s = s + np.triu(np.full((T, T), -1e9), 1)
        e = np.exp(s - s.max(-1, keepdims=True))
        self.attn_weights = e / e.sum(-1, keepdims=True)
        self.q, self.k, self.v = q, k, v
        self.ctx = (self.attn_weights @ v).transpose(0, 2, 1, 3).reshape(B, T, D)
        return self.ctx @ self.W_out + self.b_out

    def backward(self, g):
        B, T, D = g.shape
        self.dW_out = self.ctx.reshape(-1, D).T @ g.reshape(-1, D)
        self.db_out = g.reshape(-1, D).sum(0)
        dctx = self.heads(g @ self.W_out.T)
        A = self.attn_weights
        dA = dctx @ self.v.transpose(0, 1, 3, 2)
        dv = A.transpose(0, 1, 3, 2) @ dctx
        ds = A * (dA - (dA * A).sum(-1, keepdims=True)) / math.sqrt(D // self.h)
        dq, dk = ds @ self.k, ds.transpose(0, 1, 3, 2) @ self.q
        dqkv = np.concatenate([a.transpose(0, 2, 1, 3).reshape(B, T, D) for a in (dq, dk, dv)], -1)
        self.dW_qkv = self.x.reshape(-1, D).T @ dqkv.reshape(-1, 3 * D)
        self.db_qkv = dqkv.reshape(-1, 3 * D).sum(0)
        return dqkv @ self.W_qkv.T


@gradlab.register("attention")
def build(cfg):
    return Attn(cfg.d_model, cfg.num_heads, cfg.dtype)
