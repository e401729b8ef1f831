"""Correct: separate Q, K, V projections (q_weight, k_weight, v_weight and
biases) instead of the fused qkv_weight, with a param_map function that loads
the reference's fused weights into them. Plain matmul, dict-style params."""
import numpy as np

import gradlab


class SplitAttention:
    def __init__(self, d_model, num_heads, dtype="float64"):
        rng = np.random.default_rng(2)
        D = d_model
        self.h = num_heads
        self.params = {}
        for name in ("q", "k", "v", "o"):
            self.params[f"{name}_weight"] = (rng.standard_normal((D, D)) / np.sqrt(D)).astype(dtype)
            self.params[f"{name}_bias"] = np.zeros(D, dtype=dtype)
        self.grads = {}

    def heads(self, a):
        B, T, D = a.shape
        return a.reshape(B, T, self.h, D // self.h).transpose(0, 2, 1, 3)

    def join(self, a):
        B, H, T, dk = a.shape
        return a.transpose(0, 2, 1, 3).reshape(B, T, H * dk)

    def forward(self, x):
        p = self.params
        self.x = x
        self.q, self.k, self.v = (self.heads(x @ p[f"{n}_weight"] + p[f"{n}_bias"]) for n in "qkv")
        T = x.shape[1]
        self.scale = 1.0 / np.sqrt(self.q.shape[-1])
        s = self.q @ self.k.transpose(0, 1, 3, 2) * self.scale
        s = np.where(np.tril(np.ones((T, T), dtype=bool)), s, -np.inf)
        e = np.exp(s - s.max(-1, keepdims=True))
        self.attn_weights = e / e.sum(-1, keepdims=True)
        self.ctx = self.join(self.attn_weights @ self.v)
        return self.ctx @ p["o_weight"] + p["o_bias"]

    def backward(self, g):
        p, A = self.params, self.attn_weights
        D = g.shape[-1]
        self.grads["o_weight"] = self.ctx.reshape(-1, D).T @ g.reshape(-1, D)
        self.grads["o_bias"] = g.reshape(-1, D).sum(0)
        dctx = self.heads(g @ p["o_weight"].T)
        dA = dctx @ self.v.transpose(0, 1, 3, 2)
        ds = A * (dA - (dA * A).sum(-1, keepdims=True)) * self.scale
        parts = {"q": ds @ self.k, "k": ds.transpose(0, 1, 3, 2) @ self.q, "v": A.transpose(0, 1, 3, 2) @ dctx}
        dx = 0
        for n, d in parts.items():
            d = self.join(d).reshape(-1, D)
            self.grads[f"{n}_weight"] = self.x.reshape(-1, D).T @ d
            self.grads[f"{n}_bias"] = d.sum(0)
            dx = dx + d @ p[f"{n}_weight"].T
        return dx.reshape(g.shape)


def load(module, ref):
    """Copy gradlab's reference weights (fused qkv, columns Q | K | V) into the split ones."""
    D = ref["out_weight"].shape[0]
    for i, n in enumerate("qkv"):
        module.params[f"{n}_weight"][...] = ref["qkv_weight"][:, i * D:(i + 1) * D]
        module.params[f"{n}_bias"][...] = ref["qkv_bias"][i * D:(i + 1) * D]
    module.params["o_weight"][...] = ref["out_weight"]
    module.params["o_bias"][...] = ref["out_bias"]


@gradlab.register("attention", param_map=load)
def build(cfg):
    return SplitAttention(cfg.d_model, cfg.num_heads, cfg.dtype)
