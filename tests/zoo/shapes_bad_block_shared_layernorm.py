"""Broken: a Pre-LN block whose second LayerNorm is the first one again (self.ln2 = self.ln1): one set of
parameters, one forward cache, overwritten by the second use."""
import numpy as np
import gradlab

class MHA:
    def __init__(self, D, H, dtype, seed):
        r = np.random.RandomState(seed + 1)
        self.H, self.dk = H, D // H
        self.params = {
            "qkv_weight": (r.randn(D, 3 * D) * D ** -0.5).astype(dtype),
            "qkv_bias": np.zeros(3 * D, dtype=dtype),
            "out_weight": (r.randn(D, D) * D ** -0.5).astype(dtype),
            "out_bias": np.zeros(D, dtype=dtype),
        }
        self.grads = {}

    def heads(self, a):
        B, T, _ = a.shape
        return a.reshape(B, T, self.H, self.dk).transpose(0, 2, 1, 3)

    def unheads(self, a):
        B, H, T, dk = a.shape
        return a.transpose(0, 2, 1, 3).reshape(B, T, H * dk)

    def forward(self, x):
        P = self.params
        B, T, D = x.shape
        self.x = x
        qkv = x @ P["qkv_weight"] + P["qkv_bias"]
        q, k, v = self.heads(qkv[..., :D]), self.heads(qkv[..., D:2 * D]), self.heads(qkv[..., 2 * D:])
        s = np.einsum("bhqd,bhkd->bhqk", q, k) / np.sqrt(self.dk)
        mask = np.triu(np.ones((T, T), dtype=bool), k=1)
        s = np.where(mask, -1e9, s)
        s = s - s.max(-1, keepdims=True)
        e = np.exp(s)
        A = e / e.sum(-1, keepdims=True)
        self.attn_weights = A
        self.q, self.k, self.v = q, k, v
        ctx = np.einsum("bhqk,bhkd->bhqd", A, v)
        self.ctx = self.unheads(ctx)
        return self.ctx @ P["out_weight"] + P["out_bias"]

    def backward(self, g):
        P = self.params
        D = g.shape[-1]
        A, q, k, v = self.attn_weights, self.q, self.k, self.v
        self.grads["out_weight"] = np.einsum("btd,bte->de", self.ctx, g)
        self.grads["out_bias"] = g.sum(axis=(0, 1))
        dctx = self.heads(g @ P["out_weight"].T)
        dA = np.einsum("bhqd,bhkd->bhqk", dctx, v)
        dv = np.einsum("bhqk,bhqd->bhkd", A, dctx)
        ds = A * (dA - (A * dA).sum(-1, keepdims=True))
        ds = ds / np.sqrt(self.dk)
        dq = np.einsum("bhqk,bhkd->bhqd", ds, k)
        dk = np.einsum("bhqk,bhqd->bhkd", ds, q)
        dqkv = np.concatenate([self.unheads(dq), self.unheads(dk), self.unheads(dv)], axis=-1)
        self.grads["qkv_weight"] = np.einsum("btd,bte->de", self.x, dqkv)
        self.grads["qkv_bias"] = dqkv.sum(axis=(0, 1))
        return dqkv @ P["qkv_weight"].T


class LN:
    def __init__(self, D, eps, dtype):
        self.eps = eps
        self.gamma = np.ones(D, dtype=dtype)
        self.beta = np.zeros(D, dtype=dtype)
        self.dgamma = np.zeros(D, dtype=dtype)
        self.dbeta = np.zeros(D, dtype=dtype)

    def forward(self, x):
        self.shape = x.shape
        D = x.shape[-1]
        X = x.reshape(-1, D)
        mu = X.mean(axis=1, keepdims=True)
        var = ((X - mu) ** 2).mean(axis=1, keepdims=True)
        self.rstd = 1.0 / np.sqrt(var + self.eps)
        self.xn = (X - mu) * self.rstd
        return (self.xn * self.gamma + self.beta).reshape(x.shape)

    def backward(self, g):
        D = g.shape[-1]
        G = g.reshape(-1, D)
        self.dgamma = (G * self.xn).sum(axis=0)
        self.dbeta = G.sum(axis=0)
        dxn = G * self.gamma
        N = D
        dx = (self.rstd / N) * (N * dxn - dxn.sum(axis=1, keepdims=True) - self.xn * (dxn * self.xn).sum(axis=1, keepdims=True))
        return dx.reshape(self.shape)


class FFN:
    def __init__(self, D, F, dtype, seed):
        r = np.random.RandomState(seed + 7)
        self.params = {"w1": (r.randn(D, F) * D ** -0.5).astype(dtype), "b1": np.zeros(F, dtype=dtype),
                       "w2": (r.randn(F, D) * F ** -0.5).astype(dtype), "b2": np.zeros(D, dtype=dtype)}
        self.grads = {}

    def forward(self, x):
        P = self.params
        self.x = x
        self.a = x @ P["w1"] + P["b1"]
        c = np.sqrt(2 / np.pi)
        self.t = np.tanh(c * (self.a + 0.044715 * self.a ** 3))
        self.h = 0.5 * self.a * (1 + self.t)
        return self.h @ P["w2"] + P["b2"]

    def backward(self, g):
        P = self.params
        D, F = P["w1"].shape
        self.grads["w2"] = self.h.reshape(-1, F).T @ g.reshape(-1, D)
        self.grads["b2"] = g.reshape(-1, D).sum(0)
        dh = g @ P["w2"].T
        c = np.sqrt(2 / np.pi)
        dgelu = 0.5 * (1 + self.t) + 0.5 * self.a * (1 - self.t ** 2) * c * (1 + 3 * 0.044715 * self.a ** 2)
        da = dh * dgelu
        self.grads["w1"] = self.x.reshape(-1, D).T @ da.reshape(-1, F)
        self.grads["b1"] = da.reshape(-1, F).sum(0)
        return da @ P["w1"].T


class Block:
    def __init__(self, cfg):
        D = cfg.d_model
        self.ln1 = LN(D, cfg.eps, cfg.dtype)
        self.attn = MHA(D, cfg.num_heads, cfg.dtype, cfg.seed)
        self.ln2 = self.ln1                                        # BUG: LN(D, ...) of its own
        self.ffn = FFN(D, cfg.d_ff, cfg.dtype, cfg.seed)

    def forward(self, x):
        h = x + self.attn.forward(self.ln1.forward(x))
        return h + self.ffn.forward(self.ln2.forward(h))

    def backward(self, g):
        dh = g + self.ln2.backward(self.ffn.backward(g))
        dx = dh + self.ln1.backward(self.attn.backward(dh))
        return dx


@gradlab.register("block")
def build(cfg):
    return Block(cfg)
