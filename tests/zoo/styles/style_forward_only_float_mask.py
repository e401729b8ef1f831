"""Correct, forward only (backward not written yet): attribute weights, a float causal mask buffer built once for
max_len (np.triu(...) * -1e9) and sliced, LayerNorm-style running statistics beside it."""
import numpy as np

import gradlab


class Attention:
    def __init__(self, cfg):
        rng = np.random.default_rng(cfg.seed)
        D, L = cfg.d_model, cfg.max_len
        self.h = cfg.num_heads
        self.qkv_weight = (rng.standard_normal((D, 3 * D)) / np.sqrt(D)).astype(cfg.dtype)
        self.qkv_bias = np.zeros(3 * D, cfg.dtype)
        self.out_weight = (rng.standard_normal((D, D)) / np.sqrt(D)).astype(cfg.dtype)
        self.out_bias = np.zeros(D, cfg.dtype)
        self.mask = (np.triu(np.ones((L, L)), k=1) * -1e9).astype(cfg.dtype)     # a buffer, not a parameter
        self.running_mean = np.zeros(D, cfg.dtype)                                 # statistics, not parameters

    def forward(self, x):
        B, T, D = x.shape
        H, dk = self.h, D // self.h
        q, k, v = np.split(x @ self.qkv_weight + self.qkv_bias, 3, axis=-1)
        q, k, v = (a.reshape(B, T, H, dk).transpose(0, 2, 1, 3) for a in (q, k, v))
        s = q @ k.transpose(0, 1, 3, 2) / np.sqrt(dk) + self.mask[:T, :T]
        e = np.exp(s - s.max(axis=-1, keepdims=True))
        self.attn_weights = e / e.sum(axis=-1, keepdims=True)
        out = (self.attn_weights @ v).transpose(0, 2, 1, 3).reshape(B, T, D)
        return out @ self.out_weight + self.out_bias

    def backward(self, grad_out):
        raise NotImplementedError("backward comes next week")


@gradlab.register("attention")
def build(cfg):
    return Attention(cfg)
