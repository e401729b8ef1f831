"""A student's own building blocks for a Pre-LN transformer, written only against
CONTRACT.md: LayerNorm (attribute style, gamma/dgamma), attention (params/grads
dicts with the reference names, a -1e9 additive causal mask), an FFN that honours
cfg.activation, and the Pre-LN Block made of them. Registers nothing itself:
red_mod_block_ok_nested.py and red_mod_lm_ok_tied.py build on it, and the
red_mod_block_* / red_mod_lm_* variants override the one method with their bug."""
import numpy as np


def _init(rng, shape, dtype):
    return (rng.standard_normal(shape) / np.sqrt(shape[0])).astype(dtype)


class LayerNorm:                                   # attribute style: gamma / dgamma
    def __init__(self, d, eps, dtype):
        self.gamma, self.beta, self.eps = np.ones(d, dtype), np.zeros(d, dtype), eps

    def forward(self, x):
        mu = x.mean(-1, keepdims=True)
        self.rstd = 1 / np.sqrt(x.var(-1, keepdims=True) + self.eps)
        self.xhat = (x - mu) * self.rstd
        return self.gamma * self.xhat + self.beta

    def backward(self, dy):
        D = dy.shape[-1]
        self.dgamma = (dy * self.xhat).reshape(-1, D).sum(0)
        self.dbeta = dy.reshape(-1, D).sum(0)
        dxh = dy * self.gamma
        return self.rstd * (dxh - dxh.mean(-1, keepdims=True) - self.xhat * (dxh * self.xhat).mean(-1, keepdims=True))


class Attention:                                   # params/grads dicts, reference names
    def __init__(self, D, H, rng, dtype):
        self.H = H
        self.params = {"qkv_weight": _init(rng, (D, 3 * D), dtype), "qkv_bias": np.zeros(3 * D, dtype),
                       "out_weight": _init(rng, (D, D), dtype), "out_bias": np.zeros(D, dtype)}
        self.grads = {}

    def forward(self, x):
        B, T, D = x.shape
        H, dk = self.H, D // self.H
        self.x = x
        qkv = x @ self.params["qkv_weight"] + self.params["qkv_bias"]
        self.q, self.k, self.v = (t.reshape(B, T, H, dk).transpose(0, 2, 1, 3) for t in np.split(qkv, 3, -1))
        s = self.q @ self.k.transpose(0, 1, 3, 2) / np.sqrt(dk)
        s = s + np.triu(np.full((T, T), -1e9, dtype=x.dtype), 1)
        e = np.exp(s - s.max(-1, keepdims=True))
        self.attn_weights = e / e.sum(-1, keepdims=True)
        self.ctx = (self.attn_weights @ self.v).transpose(0, 2, 1, 3).reshape(B, T, D)
        return self.ctx @ self.params["out_weight"] + self.params["out_bias"]

    def backward(self, g):
        B, T, D = g.shape
        H, dk = self.H, D // self.H
        A = self.attn_weights
        self.grads["out_weight"] = self.ctx.reshape(-1, D).T @ g.reshape(-1, D)
        self.grads["out_bias"] = g.reshape(-1, D).sum(0)
        dctx = (g @ self.params["out_weight"].T).reshape(B, T, H, dk).transpose(0, 2, 1, 3)
        dA = dctx @ self.v.transpose(0, 1, 3, 2)
        dv = A.transpose(0, 1, 3, 2) @ dctx
        ds = A * (dA - (dA * A).sum(-1, keepdims=True)) / np.sqrt(dk)
        dq, dk_ = ds @ self.k, ds.transpose(0, 1, 3, 2) @ self.q
        dqkv = np.concatenate([t.transpose(0, 2, 1, 3).reshape(B, T, D) for t in (dq, dk_, dv)], -1)
        self.grads["qkv_weight"] = self.x.reshape(-1, D).T @ dqkv.reshape(-1, 3 * D)
        self.grads["qkv_bias"] = dqkv.reshape(-1, 3 * D).sum(0)
        return dqkv @ self.params["qkv_weight"].T


class FFN:                                         # params/grads dicts, honours cfg.activation
    def __init__(self, D, F, rng, dtype, activation="gelu"):
        self.relu = activation == "relu"
        self.params = {"w1": _init(rng, (D, F), dtype), "b1": np.zeros(F, dtype),
                       "w2": _init(rng, (F, D), dtype), "b2": np.zeros(D, dtype)}
        self.grads = {}

    def forward(self, x):
        self.x = x
        self.h = x @ self.params["w1"] + self.params["b1"]
        if self.relu:
            self.a = np.maximum(self.h, 0)
        else:
            self.t = np.tanh(np.sqrt(2 / np.pi) * (self.h + 0.044715 * self.h ** 3))
            self.a = 0.5 * self.h * (1 + self.t)
        return self.a @ self.params["w2"] + self.params["b2"]

    def backward(self, g):
        D, F = self.params["w1"].shape
        self.grads["w2"] = self.a.reshape(-1, F).T @ g.reshape(-1, D)
        self.grads["b2"] = g.reshape(-1, D).sum(0)
        da = g @ self.params["w2"].T
        if self.relu:
            dh = da * (self.h > 0)
        else:
            h, t = self.h, self.t
            dh = da * (0.5 * (1 + t) + 0.5 * h * (1 - t * t) * np.sqrt(2 / np.pi) * (1 + 3 * 0.044715 * h * h))
        self.grads["w1"] = self.x.reshape(-1, D).T @ dh.reshape(-1, F)
        self.grads["b1"] = dh.reshape(-1, F).sum(0)
        return dh @ self.params["w1"].T


class Block:
    def __init__(self, cfg, rng):
        D, dt = cfg.d_model, cfg.dtype
        self.ln1, self.ln2 = LayerNorm(D, cfg.eps, dt), LayerNorm(D, cfg.eps, dt)
        self.attn = Attention(D, cfg.num_heads, rng, dt)
        self.ffn = FFN(D, cfg.d_ff, rng, dt, getattr(cfg, "activation", "gelu"))

    def forward(self, x):
        h = x + self.attn.forward(self.ln1.forward(x))
        return h + self.ffn.forward(self.ln2.forward(h))

    def backward(self, g):
        g = g + self.ln2.backward(self.ffn.backward(g))
        return g + self.ln1.backward(self.attn.backward(g))
