"""Cross-attention that computes in float32 whatever it is given (returning the caller's dtype) and
masks after an ordinary softmax, renormalising the kept weights: the masked softmax exactly, padded keys
at weight 0, but a padded key still takes part in the row maximum, so changing it moves the float32
rounding of the output (CONTRACT §6)."""
import numpy as np

import gradlab
from art_parts import CrossAttention, load_cross

F32 = np.float32


class Float32Renorm(CrossAttention):
    def _weights32(self):
        return {n: (getattr(self, "W" + n).astype(F32), getattr(self, "b" + n).astype(F32)) for n in "qkvo"}

    def forward(self, x, memory, key_padding_mask=None):
        self.dtype = x.dtype
        w = self._weights32()
        self.x, self.m = x.astype(F32), memory.astype(F32)
        self.q, self.k, self.v = (self.heads(a @ w[n][0] + w[n][1])
                                  for a, n in ((self.x, "q"), (self.m, "k"), (self.m, "v")))
        scores = self.q @ self.k.transpose(0, 1, 3, 2) * F32(self.q.shape[-1] ** -0.5)
        e = np.exp(scores - scores.max(axis=-1, keepdims=True))
        A = e / e.sum(axis=-1, keepdims=True)
        if key_padding_mask is not None:
            A = A * (~np.asarray(key_padding_mask, bool))[:, None, None, :]
            total = A.sum(axis=-1, keepdims=True)
            A = A / np.where(total > 0, total, F32(1))             # a fully padded row: all weights 0
        self.attn_weights = A
        self.ctx = self.merge(A @ self.v)
        return (self.ctx @ w["o"][0] + w["o"][1]).astype(self.dtype)

    def backward(self, g):
        w, g = self._weights32(), g.astype(F32)
        D = g.shape[-1]
        flat = lambda a: a.reshape(-1, D)                                     # noqa: E731
        A, scale = self.attn_weights, F32(self.q.shape[-1] ** -0.5)
        grads = {"o": (flat(self.ctx).T @ flat(g), flat(g).sum(0))}
        dctx = self.heads(g @ w["o"][0].T)
        dA = dctx @ self.v.transpose(0, 1, 3, 2)
        ds = A * (dA - (dA * A).sum(-1, keepdims=True)) * scale
        dq, dk, dv = self.merge(ds @ self.k), self.merge(ds.transpose(0, 1, 3, 2) @ self.q), \
            self.merge(A.transpose(0, 1, 3, 2) @ dctx)
        for n, d, inp in (("q", dq, self.x), ("k", dk, self.m), ("v", dv, self.m)):
            grads[n] = (flat(inp).T @ flat(d), flat(d).sum(0))
        for n, (dW, db) in grads.items():
            setattr(self, "dW" + n, dW.astype(getattr(self, "W" + n).dtype))
            setattr(self, "db" + n, db.astype(getattr(self, "b" + n).dtype))
        dx = dq @ w["q"][0].T
        dm = dk @ w["k"][0].T + dv @ w["v"][0].T
        return dx.astype(self.dtype), dm.astype(self.dtype)


@gradlab.register("cross_attention", param_map=load_cross)
def build(cfg):
    return Float32Renorm(cfg)
