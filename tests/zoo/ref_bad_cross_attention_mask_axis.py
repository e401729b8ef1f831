"""Broken: the key padding mask is broadcast along the query axis ([:, None, :T, None]) instead of the
keys' ([:, None, None, :]); only the samples with padded keys differ from the reference."""
import numpy as np
import gradlab


def split(a, H):
    B, L, D = a.shape
    return a.reshape(B, L, H, D // H).transpose(0, 2, 1, 3)


def merge(a):
    B, H, L, dk = a.shape
    return a.transpose(0, 2, 1, 3).reshape(B, L, H * dk)


class XAttn:
    def __init__(self, D, H, dtype, seed):
        r = np.random.RandomState(seed + 3)
        self.H = H
        self.q_weight = (r.randn(D, D) / np.sqrt(D)).astype(dtype)
        self.q_bias = np.zeros(D, dtype)
        self.kv_weight = (r.randn(D, 2 * D) / np.sqrt(D)).astype(dtype)
        self.kv_bias = np.zeros(2 * D, dtype)
        self.out_weight = (r.randn(D, D) / np.sqrt(D)).astype(dtype)
        self.out_bias = np.zeros(D, dtype)

    def forward(self, x, mem, kpm=None):
        D = x.shape[-1]
        T_ = x.shape[1]
        self.x, self.mem = x, mem
        q = split(x @ self.q_weight + self.q_bias, self.H)
        kv = mem @ self.kv_weight + self.kv_bias
        k, v = split(kv[..., :D], self.H), split(kv[..., D:], self.H)
        s = q @ k.transpose(0, 1, 3, 2) / np.sqrt(q.shape[-1])
        if kpm is not None:
            keep = ~np.asarray(kpm, bool)[:, None, :T_, None]          # BUG: [:, None, None, :]
            s = np.where(keep, s, -np.inf)
            m = np.max(s, axis=-1, keepdims=True)
            m = np.where(np.isneginf(m), 0.0, m)
            e = np.exp(s - m)
            z = e.sum(-1, keepdims=True)
            A = e / np.maximum(z, 1e-300)
        else:
            e = np.exp(s - s.max(-1, keepdims=True))
            A = e / e.sum(-1, keepdims=True)
        self.attn_weights = A
        self.q, self.k, self.v = q, k, v
        self.ctx = merge(A @ v)
        return self.ctx @ self.out_weight + self.out_bias

    def backward(self, g):
        D = g.shape[-1]
        A, q, k, v = self.attn_weights, self.q, self.k, self.v
        self.dout_weight = np.einsum("btd,bte->de", self.ctx, g)
        self.dout_bias = g.sum((0, 1))
        dctx = split(g @ self.out_weight.T, self.H)
        dA = dctx @ v.transpose(0, 1, 3, 2)
        dv = A.transpose(0, 1, 3, 2) @ dctx
        ds = A * (dA - (dA * A).sum(-1, keepdims=True)) / np.sqrt(q.shape[-1])
        dq = ds @ k
        dk = ds.transpose(0, 1, 3, 2) @ q
        dqf = merge(dq)
        dkv = np.concatenate([merge(dk), merge(dv)], -1)
        self.dq_weight = np.einsum("btd,bte->de", self.x, dqf)
        self.dq_bias = dqf.sum((0, 1))
        self.dkv_weight = np.einsum("bsd,bse->de", self.mem, dkv)
        self.dkv_bias = dkv.sum((0, 1))
        return dqf @ self.q_weight.T, dkv @ self.kv_weight.T


@gradlab.register("cross_attention")
def build(cfg):
    return XAttn(cfg.d_model, cfg.num_heads, cfg.dtype, cfg.seed)
