"""Broken for shorter inputs: the causal mask is built once, in __init__, for cfg.seq_len, and never sliced to
the input's T: right at T = seq_len, a broadcast error at any shorter T."""
import numpy as np
import gradlab


class MHA:
    def __init__(self, D, H, dtype, seed, T0):
        r = np.random.RandomState(seed + 1)
        self.H, self.dk = H, D // H
        self.mask = np.triu(np.ones((T0, T0), dtype=bool), k=1)
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
        mask = self.mask                                           # BUG: self.mask[:T, :T] (built for max_len)
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


@gradlab.register("attention")
def build(cfg):
    return MHA(cfg.d_model, cfg.num_heads, cfg.dtype, cfg.seed, cfg.seq_len)
