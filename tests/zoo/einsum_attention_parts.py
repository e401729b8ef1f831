"""A student's correct causal attention (params/grads dicts with the reference names, einsum, a -1e9 mask),
with its three choices as methods of their own: the scale of the scores, the mask for T positions, and the
masked softmax. Registers nothing itself: the files that import it override one method to plant one bug."""
import numpy as np


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

    def scale(self):
        return np.sqrt(self.dk)

    def mask(self, T):
        return np.triu(np.ones((T, T), dtype=bool), k=1)

    def softmax(self, s, mask):
        s = np.where(mask, -1e9, s)
        e = np.exp(s - s.max(-1, keepdims=True))
        return e / e.sum(-1, keepdims=True)

    def forward(self, x):
        P = self.params
        B, T, D = x.shape
        self.x = x
        qkv = x @ P["qkv_weight"] + P["qkv_bias"]
        q, k, v = self.heads(qkv[..., :D]), self.heads(qkv[..., D:2 * D]), self.heads(qkv[..., 2 * D:])
        A = self.softmax(np.einsum("bhqd,bhkd->bhqk", q, k) / self.scale(), self.mask(T))
        self.attn_weights = A
        self.q, self.k, self.v = q, k, v
        self.ctx = self.unheads(np.einsum("bhqk,bhkd->bhqd", A, v))
        return self.ctx @ P["out_weight"] + P["out_bias"]

    def backward(self, g):
        P = self.params
        A, q, k, v = self.attn_weights, self.q, self.k, self.v
        self.grads["out_weight"] = np.einsum("btd,bte->de", self.ctx, g)
        self.grads["out_bias"] = g.sum(axis=(0, 1))
        dctx = self.heads(g @ P["out_weight"].T)
        dA = np.einsum("bhqd,bhkd->bhqk", dctx, v)
        dv = np.einsum("bhqk,bhqd->bhkd", A, dctx)
        ds = A * (dA - (A * dA).sum(-1, keepdims=True)) / self.scale()
        dq = np.einsum("bhqk,bhkd->bhqd", ds, k)
        dk = np.einsum("bhqk,bhqd->bhkd", ds, q)
        dqkv = np.concatenate([self.unheads(dq), self.unheads(dk), self.unheads(dv)], axis=-1)
        self.grads["qkv_weight"] = np.einsum("btd,bte->de", self.x, dqkv)
        self.grads["qkv_bias"] = dqkv.sum(axis=(0, 1))
        return dqkv @ P["qkv_weight"].T
