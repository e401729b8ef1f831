"""Style: a module whose backward is not written yet, as the seed article shows its
attention (forward only; "backward omitted"): attributes qkv_weight ... out_bias, a
boolean tril mask with -inf, and a backward that raises NotImplementedError. A
LayerNorm with no backward method at all. Forward checks must judge them."""
import numpy as np

import gradlab


class CausalSelfAttention:
    def __init__(self, d_model, num_heads, dtype="float64", seed=0):
        rng = np.random.default_rng(seed)
        self.d_model, self.num_heads, self.d_k = d_model, num_heads, d_model // num_heads
        self.qkv_weight = (rng.standard_normal((d_model, 3 * d_model)) / np.sqrt(d_model)).astype(dtype)
        self.qkv_bias = np.zeros(3 * d_model, dtype)
        self.out_weight = (rng.standard_normal((d_model, d_model)) / np.sqrt(d_model)).astype(dtype)
        self.out_bias = np.zeros(d_model, dtype)

    def mask(self, T):
        return np.tril(np.ones((T, T), dtype=bool))

    def forward(self, x):
        B, T, D = x.shape
        q, k, v = np.split(x @ self.qkv_weight + self.qkv_bias, 3, axis=-1)
        q, k, v = (t.reshape(B, T, self.num_heads, self.d_k).transpose(0, 2, 1, 3) for t in (q, k, v))
        scores = np.where(self.mask(T), q @ k.transpose(0, 1, 3, 2) / np.sqrt(self.d_k), -np.inf)
        e = np.exp(scores - scores.max(axis=-1, keepdims=True))
        self.attn_weights = e / e.sum(axis=-1, keepdims=True)
        out = (self.attn_weights @ v).transpose(0, 2, 1, 3).reshape(B, T, D)
        return out @ self.out_weight + self.out_bias

    def backward(self, grad_output):
        raise NotImplementedError("backward comes in the next chapter")


class LayerNorm:
    def __init__(self, d_model, eps):
        self.gamma, self.beta, self.eps = np.ones(d_model), np.zeros(d_model), eps

    def forward(self, x):
        mean = x.mean(axis=-1, keepdims=True)
        var = x.var(axis=-1, keepdims=True)
        return self.gamma * (x - mean) / np.sqrt(var + self.eps) + self.beta


@gradlab.register("attention")
def build(cfg):
    return CausalSelfAttention(cfg.d_model, cfg.num_heads, cfg.dtype, cfg.seed)


@gradlab.register("layernorm")
def build_ln(cfg):
    return LayerNorm(cfg.d_model, cfg.eps)
