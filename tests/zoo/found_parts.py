"""A student's building blocks, written only against CONTRACT.md, each
exposing its parameters a different way (CONTRACT §2):

- LayerNorm: attribute pairs gamma/dgamma, beta/dbeta, and forward/backward
  caches self.x and self.dx that must NOT be taken for a parameter;
- FeedForward: parameters() and gradients() returning dicts; GELU, or ReLU
  (a kink) when cfg.activation == "relu";
- Attention: params/grads dicts, a -1e9 additive mask instead of -inf.
"""
import numpy as np

import gradlab


class LayerNorm:
    def __init__(self, d, eps):
        self.gamma = np.ones(d)
        self.beta = np.zeros(d)
        self.eps = eps
        self.x = None          # caches, filled by forward / backward
        self.dx = None

    def forward(self, x):
        self.x = x
        mu = x.mean(-1, keepdims=True)
        self.inv = 1 / np.sqrt(x.var(-1, keepdims=True) + self.eps)
        self.xhat = (x - mu) * self.inv
        return self.gamma * self.xhat + self.beta

    def backward(self, dy):
        D = dy.shape[-1]
        self.dgamma = (dy * self.xhat).reshape(-1, D).sum(0)
        self.dbeta = dy.reshape(-1, D).sum(0)
        dxh = dy * self.gamma
        self.dx = self.inv * (dxh - dxh.mean(-1, keepdims=True)
                              - self.xhat * (dxh * self.xhat).mean(-1, keepdims=True))
        return self.dx


class FeedForward:
    def __init__(self, d, d_ff, rng, activation="gelu"):
        self.relu = activation == "relu"
        self.W1 = rng.normal(0, d ** -0.5, (d, d_ff))
        self.B1 = np.zeros(d_ff)
        self.W2 = rng.normal(0, d_ff ** -0.5, (d_ff, d))
        self.B2 = np.zeros(d)
        self.g = {}

    def parameters(self):
        return {"w1": self.W1, "b1": self.B1, "w2": self.W2, "b2": self.B2}

    def gradients(self):
        return self.g

    def forward(self, x):
        self.x = x
        self.h = x @ self.W1 + self.B1
        if self.relu:
            self.a = np.maximum(self.h, 0)
        else:
            self.t = np.tanh(np.sqrt(2 / np.pi) * (self.h + 0.044715 * self.h ** 3))
            self.a = 0.5 * self.h * (1 + self.t)
        return self.a @ self.W2 + self.B2

    def backward(self, dy):
        D, F = self.W1.shape
        self.g["w2"] = self.a.reshape(-1, F).T @ dy.reshape(-1, D)
        self.g["b2"] = dy.reshape(-1, D).sum(0)
        if self.relu:
            dh = (dy @ self.W2.T) * (self.h > 0)
        else:
            h, t = self.h, self.t
            dh = (dy @ self.W2.T) * (0.5 * (1 + t) + 0.5 * h * (1 - t * t) * np.sqrt(2 / np.pi)
                                     * (1 + 3 * 0.044715 * h * h))
        self.g["w1"] = self.x.reshape(-1, D).T @ dh.reshape(-1, F)
        self.g["b1"] = dh.reshape(-1, F).sum(0)
        return dh @ self.W1.T


class Attention:
    def __init__(self, d, heads, rng):
        self.heads = heads
        self.params = {"qkv_weight": rng.normal(0, d ** -0.5, (d, 3 * d)),
                       "qkv_bias": rng.normal(0, 0.1, 3 * d),
                       "out_weight": rng.normal(0, d ** -0.5, (d, d)),
                       "out_bias": rng.normal(0, 0.1, d)}
        self.grads = {}

    def _split(self, a):
        B, T, D = a.shape
        return a.reshape(B, T, self.heads, D // self.heads).swapaxes(1, 2)

    def _merge(self, a):
        B, H, T, k = a.shape
        return a.swapaxes(1, 2).reshape(B, T, H * k)

    def forward(self, x):
        p = self.params
        T, D = x.shape[1], x.shape[2]
        self.x = x
        q, k, v = np.split(x @ p["qkv_weight"] + p["qkv_bias"], 3, axis=-1)
        self.q, self.k, self.v = self._split(q), self._split(k), self._split(v)
        s = self.q @ self.k.swapaxes(-1, -2) / np.sqrt(D // self.heads)
        s = s - 1e9 * np.triu(np.ones((T, T)), 1)
        e = np.exp(s - s.max(-1, keepdims=True))
        self.attn_weights = e / e.sum(-1, keepdims=True)
        self.ctx = self._merge(self.attn_weights @ self.v)
        return self.ctx @ p["out_weight"] + p["out_bias"]

    def backward(self, dy):
        p = self.params
        D = dy.shape[-1]
        self.grads["out_weight"] = self.ctx.reshape(-1, D).T @ dy.reshape(-1, D)
        self.grads["out_bias"] = dy.reshape(-1, D).sum(0)
        dctx = self._split(dy @ p["out_weight"].T)
        A = self.attn_weights
        dA = dctx @ self.v.swapaxes(-1, -2)
        dv = A.swapaxes(-1, -2) @ dctx
        ds = A * (dA - (A * dA).sum(-1, keepdims=True)) / np.sqrt(D // self.heads)
        dqkv = np.concatenate([self._merge(ds @ self.k), self._merge(ds.swapaxes(-1, -2) @ self.q),
                               self._merge(dv)], axis=-1)
        self.grads["qkv_weight"] = self.x.reshape(-1, D).T @ dqkv.reshape(-1, 3 * D)
        self.grads["qkv_bias"] = dqkv.reshape(-1, 3 * D).sum(0)
        return dqkv @ p["qkv_weight"].T


@gradlab.register("layernorm")
def build_layernorm(cfg):
    return LayerNorm(cfg.d_model, cfg.eps)


@gradlab.register("ffn")
def build_ffn(cfg):
    return FeedForward(cfg.d_model, cfg.d_ff, np.random.default_rng(cfg.seed), cfg.activation)


@gradlab.register("attention")
def build_attention(cfg):
    return Attention(cfg.d_model, cfg.num_heads, np.random.default_rng(cfg.seed))
