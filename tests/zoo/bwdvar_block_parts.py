"""A student's correct Pre-LN block in the params/grads dict style: LayerNorm,
self-attention with a -inf causal mask, a GELU feed-forward, and the Block that
adds both residuals in forward and both skip paths in backward. Registers
nothing itself: the bwdvar_block_* files override Block.backward to plant one bug."""
import numpy as np


class LayerNorm:
    def __init__(self, d, eps, dtype):
        self.params = {"gamma": np.ones(d, dtype), "beta": np.zeros(d, dtype)}
        self.grads, self.eps = {}, eps

    def forward(self, x):
        self.xhat = (x - x.mean(-1, keepdims=True)) / np.sqrt(x.var(-1, keepdims=True) + self.eps)
        self.rstd = 1 / np.sqrt(x.var(-1, keepdims=True) + self.eps)
        return self.params["gamma"] * self.xhat + self.params["beta"]

    def backward(self, dy):
        D = dy.shape[-1]
        self.grads["gamma"] = (dy * self.xhat).reshape(-1, D).sum(0)
        self.grads["beta"] = dy.reshape(-1, D).sum(0)
        d = dy * self.params["gamma"]
        return self.rstd * (d - d.mean(-1, keepdims=True) - self.xhat * (d * self.xhat).mean(-1, keepdims=True))


class SelfAttention:
    def __init__(self, D, H, rng, dtype):
        self.H = H
        self.params = {"qkv_weight": (rng.standard_normal((D, 3 * D)) / np.sqrt(D)).astype(dtype),
                       "qkv_bias": np.zeros(3 * D, dtype),
                       "out_weight": (rng.standard_normal((D, D)) / np.sqrt(D)).astype(dtype),
                       "out_bias": np.zeros(D, dtype)}
        self.grads = {}

    def forward(self, x):
        B, T, D = x.shape
        dk = D // self.H
        self.x = x
        qkv = x @ self.params["qkv_weight"] + self.params["qkv_bias"]
        self.q, self.k, self.v = (a.reshape(B, T, self.H, dk).transpose(0, 2, 1, 3) for a in np.split(qkv, 3, -1))
        s = self.q @ self.k.transpose(0, 1, 3, 2) / np.sqrt(dk)
        s = np.where(np.tril(np.ones((T, T), bool)), s, -np.inf)
        e = np.exp(s - s.max(-1, keepdims=True))
        self.attn_weights = e / e.sum(-1, keepdims=True)
        self.ctx = (self.attn_weights @ self.v).transpose(0, 2, 1, 3).reshape(B, T, D)
        return self.ctx @ self.params["out_weight"] + self.params["out_bias"]

    def dscores(self, A, dA):       # the softmax's vector-Jacobian product, row by row
        return A * (dA - (dA * A).sum(-1, keepdims=True))

    def backward(self, g):
        B, T, D = g.shape
        dk = D // self.H
        A = self.attn_weights
        self.grads["out_weight"] = self.ctx.reshape(-1, D).T @ g.reshape(-1, D)
        self.grads["out_bias"] = g.reshape(-1, D).sum(0)
        dctx = (g @ self.params["out_weight"].T).reshape(B, T, self.H, dk).transpose(0, 2, 1, 3)
        dA = dctx @ self.v.transpose(0, 1, 3, 2)
        dv = A.transpose(0, 1, 3, 2) @ dctx
        ds = self.dscores(A, dA) / np.sqrt(dk)
        dq, dkk = ds @ self.k, ds.transpose(0, 1, 3, 2) @ self.q
        dqkv = np.concatenate([a.transpose(0, 2, 1, 3).reshape(B, T, D) for a in (dq, dkk, dv)], -1)
        self.grads["qkv_weight"] = self.x.reshape(-1, D).T @ dqkv.reshape(-1, 3 * D)
        self.grads["qkv_bias"] = dqkv.reshape(-1, 3 * D).sum(0)
        return dqkv @ self.params["qkv_weight"].T


class FeedForward:
    def __init__(self, D, F, rng, dtype):
        self.params = {"w1": (rng.standard_normal((D, F)) / np.sqrt(D)).astype(dtype), "b1": np.zeros(F, dtype),
                       "w2": (rng.standard_normal((F, D)) / np.sqrt(F)).astype(dtype), "b2": np.zeros(D, dtype)}
        self.grads = {}

    def forward(self, x):
        self.x = x
        self.h = x @ self.params["w1"] + self.params["b1"]
        self.t = np.tanh(np.sqrt(2 / np.pi) * (self.h + 0.044715 * self.h ** 3))
        self.a = 0.5 * self.h * (1 + self.t)
        return self.a @ self.params["w2"] + self.params["b2"]

    def backward(self, g):
        D, F = self.params["w1"].shape
        h, t = self.h, self.t
        self.grads["w2"] = self.a.reshape(-1, F).T @ g.reshape(-1, D)
        self.grads["b2"] = g.reshape(-1, D).sum(0)
        dh = (g @ self.params["w2"].T) * (0.5 * (1 + t) + 0.5 * h * (1 - t * t) * np.sqrt(2 / np.pi)
                                          * (1 + 3 * 0.044715 * h * h))
        self.grads["w1"] = self.x.reshape(-1, D).T @ dh.reshape(-1, F)
        self.grads["b1"] = dh.reshape(-1, F).sum(0)
        return dh @ self.params["w1"].T


class Block:
    def __init__(self, cfg):
        rng = np.random.default_rng(cfg.seed)
        D, dt = cfg.d_model, cfg.dtype
        self.ln1, self.ln2 = LayerNorm(D, cfg.eps, dt), LayerNorm(D, cfg.eps, dt)
        self.attn = SelfAttention(D, cfg.num_heads, rng, dt)
        self.ffn = FeedForward(D, cfg.d_ff, rng, dt)

    def forward(self, x):
        h = x + self.attn.forward(self.ln1.forward(x))
        return h + self.ffn.forward(self.ln2.forward(h))

    def backward(self, dout):
        dh = dout + self.ln2.backward(self.ffn.backward(dout))
        return dh + self.ln1.backward(self.attn.backward(dh))
