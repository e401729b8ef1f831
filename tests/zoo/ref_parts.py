"""A student's transformer parts, written only against CONTRACT.md (params /
grads dicts with the reference names). The keyword switches reproduce bugs
students make in the forward pass, each with a backward that is consistent
with its own forward: the gradient check passes, only comparing with the
reference (or training) shows the bug. Registers nothing itself; the
ref_*.py / overfit_*.py files next to it build on it.
"""
import math

import numpy as np
from scipy.special import erf


class LayerNorm:
    def __init__(self, d, eps=1e-5, dtype="float64", axis=-1):
        self.params = {"gamma": np.ones(d, dtype=dtype), "beta": np.zeros(d, dtype=dtype)}
        self.grads = {}
        self.eps, self.axis = eps, axis

    def forward(self, x):
        mu = x.mean(axis=self.axis, keepdims=True)
        self.inv = 1 / np.sqrt(x.var(axis=self.axis, keepdims=True) + self.eps)
        self.xhat = (x - mu) * self.inv
        return self.params["gamma"] * self.xhat + self.params["beta"]

    def backward(self, dy):
        D = dy.shape[-1]
        self.grads["gamma"] = (dy * self.xhat).reshape(-1, D).sum(0)
        self.grads["beta"] = dy.reshape(-1, D).sum(0)
        dxh = dy * self.params["gamma"]
        a = self.axis
        return self.inv * (dxh - dxh.mean(axis=a, keepdims=True)
                           - self.xhat * (dxh * self.xhat).mean(axis=a, keepdims=True))


class Attention:
    """scale: the factor on q @ k^T, None = 1/sqrt(d_k). merge: "transpose" (right) or "reshape" (bug).
    axis: the softmax axis (-1 right, -2 bug)."""

    def __init__(self, d, h, dtype="float64", seed=0, scale=None, merge="transpose", axis=-1):
        rng = np.random.default_rng(seed)
        self.h, self.dk = h, d // h
        self.scale = 1 / math.sqrt(self.dk) if scale is None else scale
        self.merge_mode, self.axis = merge, axis
        self.params = {"qkv_weight": (rng.normal(size=(d, 3 * d)) / math.sqrt(d)).astype(dtype),
                       "qkv_bias": np.zeros(3 * d, dtype=dtype),
                       "out_weight": (rng.normal(size=(d, d)) / math.sqrt(d)).astype(dtype),
                       "out_bias": np.zeros(d, dtype=dtype)}
        self.grads = {}

    def split(self, a):
        B, T, D = a.shape
        return a.reshape(B, T, self.h, self.dk).transpose(0, 2, 1, 3)

    def merge(self, a):
        B, H, T, dk = a.shape
        if self.merge_mode == "reshape":
            return a.reshape(B, T, H * dk)
        return a.transpose(0, 2, 1, 3).reshape(B, T, H * dk)

    def unmerge(self, a):                  # the inverse of merge, for backward
        B, T, D = a.shape
        if self.merge_mode == "reshape":
            return a.reshape(B, self.h, T, self.dk)
        return self.split(a)

    def forward(self, x):
        p = self.params
        self.x = x
        T = x.shape[1]
        q, k, v = np.split(x @ p["qkv_weight"] + p["qkv_bias"], 3, axis=-1)
        self.q, self.k, self.v = self.split(q), self.split(k), self.split(v)
        s = self.q @ self.k.transpose(0, 1, 3, 2) * self.scale
        s = np.where(np.tril(np.ones((T, T), bool)), s, -np.inf)
        e = np.exp(s - s.max(axis=self.axis, keepdims=True))
        self.attn_weights = e / e.sum(axis=self.axis, keepdims=True)
        self.ctx = self.merge(self.attn_weights @ self.v)
        return self.ctx @ p["out_weight"] + p["out_bias"]

    def backward(self, g):
        p = self.params
        D = g.shape[-1]
        self.grads["out_weight"] = self.ctx.reshape(-1, D).T @ g.reshape(-1, D)
        self.grads["out_bias"] = g.reshape(-1, D).sum(0)
        dctx = self.unmerge(g @ p["out_weight"].T)
        A = self.attn_weights
        dA = dctx @ self.v.transpose(0, 1, 3, 2)
        dv = A.transpose(0, 1, 3, 2) @ dctx
        ds = A * (dA - (dA * A).sum(axis=self.axis, keepdims=True)) * self.scale
        dq, dk = ds @ self.k, ds.transpose(0, 1, 3, 2) @ self.q
        merge = lambda a: a.transpose(0, 2, 1, 3).reshape(a.shape[0], a.shape[2], D)   # noqa: E731
        dqkv = np.concatenate([merge(dq), merge(dk), merge(dv)], axis=-1)
        self.grads["qkv_weight"] = self.x.reshape(-1, D).T @ dqkv.reshape(-1, 3 * D)
        self.grads["qkv_bias"] = dqkv.reshape(-1, 3 * D).sum(0)
        return dqkv @ p["qkv_weight"].T


def gelu(h, exact=False):
    if exact:
        return 0.5 * h * (1 + erf(h / math.sqrt(2)))
    return 0.5 * h * (1 + np.tanh(math.sqrt(2 / math.pi) * (h + 0.044715 * h ** 3)))


def gelu_grad(h, exact=False):
    if exact:
        return 0.5 * (1 + erf(h / math.sqrt(2))) + h * np.exp(-h * h / 2) / math.sqrt(2 * math.pi)
    c = math.sqrt(2 / math.pi)
    t = np.tanh(c * (h + 0.044715 * h ** 3))
    return 0.5 * (1 + t) + 0.5 * h * (1 - t * t) * c * (1 + 3 * 0.044715 * h * h)


class FFN:
    def __init__(self, d, f, dtype="float64", seed=1, exact_gelu=False):
        rng = np.random.default_rng(seed)
        self.exact = exact_gelu
        self.params = {"w1": (rng.normal(size=(d, f)) / math.sqrt(d)).astype(dtype), "b1": np.zeros(f, dtype=dtype),
                       "w2": (rng.normal(size=(f, d)) / math.sqrt(f)).astype(dtype), "b2": np.zeros(d, dtype=dtype)}
        self.grads = {}

    def forward(self, x):
        p = self.params
        self.x = x
        self.h = x @ p["w1"] + p["b1"]
        self.a = gelu(self.h, self.exact)
        return self.a @ p["w2"] + p["b2"]

    def backward(self, g):
        p = self.params
        D, F = p["w1"].shape
        self.grads["w2"] = self.a.reshape(-1, F).T @ g.reshape(-1, D)
        self.grads["b2"] = g.reshape(-1, D).sum(0)
        dh = (g @ p["w2"].T) * gelu_grad(self.h, self.exact)
        self.grads["w1"] = self.x.reshape(-1, D).T @ dh.reshape(-1, F)
        self.grads["b1"] = dh.reshape(-1, F).sum(0)
        return dh @ p["w1"].T


class Block:
    """Pre-LN (right) or post_ln=True (the bug: LayerNorm after each residual)."""

    def __init__(self, cfg, post_ln=False, seed=0):
        self.ln1 = LayerNorm(cfg.d_model, cfg.eps, cfg.dtype)
        self.attn = Attention(cfg.d_model, cfg.num_heads, cfg.dtype, seed=seed)
        self.ln2 = LayerNorm(cfg.d_model, cfg.eps, cfg.dtype)
        self.ffn = FFN(cfg.d_model, cfg.d_ff, cfg.dtype, seed=seed + 1)
        self.post_ln = post_ln

    def forward(self, x):
        if self.post_ln:
            h = self.ln1.forward(x + self.attn.forward(x))
            return self.ln2.forward(h + self.ffn.forward(h))
        h = x + self.attn.forward(self.ln1.forward(x))
        return h + self.ffn.forward(self.ln2.forward(h))

    def backward(self, g):
        if self.post_ln:
            d = self.ln2.backward(g)
            dh = d + self.ffn.backward(d)
            d = self.ln1.backward(dh)
            return d + self.attn.backward(d)
        dh = g + self.ln2.backward(self.ffn.backward(g))
        return dh + self.ln1.backward(self.attn.backward(dh))


class RenamedLayerNorm:
    """A correct LayerNorm whose names (weight, bias) are not the reference's (gamma, beta)."""

    def __init__(self, d, eps, dtype):
        self.params = {"weight": np.ones(d, dtype=dtype), "bias": np.zeros(d, dtype=dtype)}
        self.grads = {}
        self.eps = eps

    def forward(self, x):
        self.inv = 1 / np.sqrt(x.var(-1, keepdims=True) + self.eps)
        self.xhat = (x - x.mean(-1, keepdims=True)) * self.inv
        return self.params["weight"] * self.xhat + self.params["bias"]

    def backward(self, g):
        D = g.shape[-1]
        self.grads["weight"] = (g * self.xhat).reshape(-1, D).sum(0)
        self.grads["bias"] = g.reshape(-1, D).sum(0)
        d = g * self.params["weight"]
        return self.inv * (d - d.mean(-1, keepdims=True) - self.xhat * (d * self.xhat).mean(-1, keepdims=True))
