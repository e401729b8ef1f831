"""Style: a mini-framework with a Parameter class (the array in `.data`, its
gradient in `.grad`, None until the first backward), parameters as attributes of
the layer, as numpy "tinytorch" projects write them. Causal multi-head attention
with a fused qkv projection, heads split with reshape + transpose."""
import numpy as np

import gradlab


class Parameter:
    def __init__(self, data):
        self.data = data
        self.grad = None

    def zero_grad(self):
        self.grad = None


class CausalSelfAttention:
    def __init__(self, d_model, n_heads, dtype="float64", seed=0):
        rng = np.random.default_rng(seed)
        self.n_heads, self.d_head = n_heads, d_model // n_heads
        self.qkv_weight = Parameter((rng.standard_normal((d_model, 3 * d_model)) / np.sqrt(d_model)).astype(dtype))
        self.qkv_bias = Parameter(np.zeros(3 * d_model, dtype))
        self.out_weight = Parameter((rng.standard_normal((d_model, d_model)) / np.sqrt(d_model)).astype(dtype))
        self.out_bias = Parameter(np.zeros(d_model, dtype))
        self.attn_weights = None

    def _split(self, t):
        B, T, D = t.shape
        return t.reshape(B, T, self.n_heads, self.d_head).transpose(0, 2, 1, 3)

    def _merge(self, t):
        B, H, T, d = t.shape
        return t.transpose(0, 2, 1, 3).reshape(B, T, H * d)

    def forward(self, x):
        B, T, D = x.shape
        qkv = x @ self.qkv_weight.data + self.qkv_bias.data
        q, k, v = (self._split(t) for t in np.split(qkv, 3, axis=-1))
        scores = q @ k.transpose(0, 1, 3, 2) / np.sqrt(self.d_head)
        future = np.triu(np.ones((T, T), dtype=bool), k=1)
        scores = np.where(future, -np.inf, scores)
        e = np.exp(scores - scores.max(-1, keepdims=True))
        self.attn_weights = e / e.sum(-1, keepdims=True)
        ctx = self._merge(self.attn_weights @ v)
        self.cache = (x, q, k, v, ctx)
        return ctx @ self.out_weight.data + self.out_bias.data

    def backward(self, dout):
        x, q, k, v, ctx = self.cache
        D = x.shape[-1]
        A = self.attn_weights
        self.out_weight.grad = ctx.reshape(-1, D).T @ dout.reshape(-1, D)
        self.out_bias.grad = dout.sum(axis=(0, 1))
        dctx = self._split(dout @ self.out_weight.data.T)
        dA = dctx @ v.transpose(0, 1, 3, 2)
        dv = A.transpose(0, 1, 3, 2) @ dctx
        dscores = self.softmax_backward(A, dA) / np.sqrt(self.d_head)
        dq = dscores @ k
        dk = dscores.transpose(0, 1, 3, 2) @ q
        dqkv = np.concatenate([self._merge(dq), self._merge(dk), self._merge(dv)], axis=-1)
        self.qkv_weight.grad = x.reshape(-1, D).T @ dqkv.reshape(-1, 3 * D)
        self.qkv_bias.grad = dqkv.sum(axis=(0, 1))
        return dqkv @ self.qkv_weight.data.T

    @staticmethod
    def softmax_backward(A, dA):
        return A * (dA - (dA * A).sum(-1, keepdims=True))


@gradlab.register("attention")
def build(cfg):
    return CausalSelfAttention(cfg.d_model, cfg.num_heads, cfg.dtype, cfg.seed)
