"""Post-LN Transformer encoder layer (article 000 §5): LN(x + attn(x)), then LN(h + ffn(h)).
Self-attention without a mask (an encoder sees the whole sentence) and a ReLU FFN. The parameter
names are the article's, so its layer registers without a param_map."""
import math

import numpy as np

import gradlab

from .functional import softmax
from .layernorm import layernorm, layernorm_backward


class EncoderLayer:
    """x (B, T, D) -> (B, T, D). W_Q, W_K, W_V, W_O (D, D) (heads contiguous in the columns),
    W1 (D, d_ff), b1, W2 (d_ff, D), b2, gamma1/beta1, gamma2/beta2 (D,)."""

    def __init__(self, d_model, num_heads, d_ff, eps=1e-5, dtype="float64", seed=0):
        rng = np.random.default_rng(seed)
        D, F = d_model, d_ff
        self.H, self.eps = num_heads, eps
        w = {n: rng.standard_normal(s) / np.sqrt(s[0]) for n, s in
             [("W_Q", (D, D)), ("W_K", (D, D)), ("W_V", (D, D)), ("W_O", (D, D)), ("W1", (D, F)), ("W2", (F, D))]}
        w.update({"b1": 0.1 * rng.standard_normal(F), "b2": 0.1 * rng.standard_normal(D)})
        for i in ("1", "2"):
            w.update({"gamma" + i: 1 + 0.1 * rng.standard_normal(D), "beta" + i: 0.1 * rng.standard_normal(D)})
        self.params = {k: v.astype(dtype) for k, v in w.items()}
        self.grads = {k: np.zeros_like(v) for k, v in self.params.items()}

    def _split(self, a):                            # (B, T, D) -> (B, H, T, d_k)
        B, T, D = a.shape
        return a.reshape(B, T, self.H, D // self.H).transpose(0, 2, 1, 3)

    def _merge(self, a):                            # (B, H, T, d_k) -> (B, T, D)
        B, H, T, dk = a.shape
        return a.transpose(0, 2, 1, 3).reshape(B, T, H * dk)

    def forward(self, x):                           # x (B, T, D)
        p = self.params
        q, k, v = (self._split(x @ p[n]) for n in ("W_Q", "W_K", "W_V"))   # (B, H, T, d_k)
        self.scale = 1 / math.sqrt(q.shape[-1])
        self.attn_weights = softmax(q @ k.transpose(0, 1, 3, 2) * self.scale)   # (B, H, T, T), no mask
        self.ctx = self._merge(self.attn_weights @ v)                          # (B, T, D)
        h, self.ln1 = layernorm(x + self.ctx @ p["W_O"], p["gamma1"], p["beta1"], self.eps)   # (B, T, D)
        self.pre = h @ p["W1"] + p["b1"]                                       # (B, T, d_ff)
        self.relu = np.maximum(self.pre, 0)
        out, self.ln2 = layernorm(h + self.relu @ p["W2"] + p["b2"], p["gamma2"], p["beta2"], self.eps)
        self.x, self.q, self.k, self.v, self.h = x, q, k, v, h
        return out

    def backward(self, grad_out):                   # grad_out (B, T, D)
        p, gr = self.params, self.grads
        D = grad_out.shape[-1]
        flat = lambda a: a.reshape(-1, a.shape[-1])                            # noqa: E731
        ds2, gr["gamma2"], gr["beta2"] = layernorm_backward(grad_out, self.ln2, p["gamma2"])   # (B, T, D)
        gr["W2"], gr["b2"] = flat(self.relu).T @ flat(ds2), flat(ds2).sum(0)
        dpre = (ds2 @ p["W2"].T) * (self.pre > 0)                              # (B, T, d_ff)
        gr["W1"], gr["b1"] = flat(self.h).T @ flat(dpre), flat(dpre).sum(0)
        dh = ds2 + dpre @ p["W1"].T                                            # residual + FFN branch
        ds1, gr["gamma1"], gr["beta1"] = layernorm_backward(dh, self.ln1, p["gamma1"])
        gr["W_O"] = flat(self.ctx).T @ flat(ds1)
        dctx = self._split(ds1 @ p["W_O"].T)                                   # (B, H, T, d_k)
        A = self.attn_weights
        dA = dctx @ self.v.transpose(0, 1, 3, 2)
        dv = A.transpose(0, 1, 3, 2) @ dctx
        dscores = A * (dA - (dA * A).sum(-1, keepdims=True)) * self.scale     # softmax Jacobian
        dq, dk = dscores @ self.k, dscores.transpose(0, 1, 3, 2) @ self.q
        dx = ds1.copy()                                                        # the residual
        for name, d in (("W_Q", dq), ("W_K", dk), ("W_V", dv)):
            d = self._merge(d)                                                 # (B, T, D)
            gr[name] = flat(self.x).T @ flat(d)
            dx += d @ p[name].T
        assert dx.shape[-1] == D
        return dx


@gradlab.register("encoder_layer")
def build(cfg):
    return EncoderLayer(cfg.d_model, cfg.num_heads, cfg.d_ff, eps=cfg.eps, dtype=cfg.dtype, seed=cfg.seed)
