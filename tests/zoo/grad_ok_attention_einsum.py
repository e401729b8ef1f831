"""Correct: the same attention written with einsum instead of matmul."""
import numpy as np

import gradlab
from grad_ok_attention import StudentAttention


class EinsumAttention(StudentAttention):
    def forward(self, x):
        p = self.params
        self.x = x
        D = x.shape[-1]
        qkv = np.einsum("btd,de->bte", x, p["qkv_weight"]) + p["qkv_bias"]
        self.q, self.k, self.v = (self.split(qkv[..., i * D:(i + 1) * D]) for i in range(3))
        self.scale = 1.0 / np.sqrt(self.q.shape[-1])
        s = self.mask(np.einsum("bhqd,bhkd->bhqk", self.q, self.k) * self.scale)
        e = np.exp(s - s.max(axis=-1, keepdims=True))
        self.attn_weights = e / e.sum(axis=-1, keepdims=True)
        self.ctx = self.merge(np.einsum("bhqk,bhkd->bhqd", self.attn_weights, self.v))
        return np.einsum("btd,de->bte", self.ctx, p["out_weight"]) + p["out_bias"]

    def backward(self, g):
        p, A = self.params, self.attn_weights
        self.grads["out_weight"] = np.einsum("btd,bte->de", self.ctx, g)
        self.grads["out_bias"] = np.einsum("bte->e", g)
        dctx = self.split(np.einsum("bte,de->btd", g, p["out_weight"]))
        dA = np.einsum("bhqd,bhkd->bhqk", dctx, self.v)
        dv = np.einsum("bhqk,bhqd->bhkd", A, dctx)
        ds = A * (dA - np.einsum("bhqk,bhqk->bhq", dA, A)[..., None]) * self.scale
        dq = np.einsum("bhqk,bhkd->bhqd", ds, self.k)
        dk = np.einsum("bhqk,bhqd->bhkd", ds, self.q)
        dqkv = np.concatenate([self.merge(dq), self.merge(dk), self.merge(dv)], axis=-1)
        self.grads["qkv_weight"] = np.einsum("btd,bte->de", self.x, dqkv)
        self.grads["qkv_bias"] = np.einsum("bte->e", dqkv)
        return np.einsum("bte,de->btd", dqkv, p["qkv_weight"])


@gradlab.register("attention")
def build(cfg):
    return EinsumAttention(cfg.d_model, cfg.num_heads, cfg.dtype)
