"""Correct: separate W_q/W_k/W_v/W_o attributes (grads dW_q, ...), a Python loop over
heads, a causal mask precomputed in __init__ for max_len, -1e9 fill, float32-safe
constants; a param_map function splits the fused reference weights.
bwdvar_attention_heads_loop_no_jacobian.py overrides dscores to plant one bug."""
import numpy as np

import gradlab


class MultiHeadAttention:
    def __init__(self, d_model, n_heads, max_len, dtype="float64"):
        self.h, self.d_k = n_heads, d_model // n_heads
        init = lambda *s: (np.random.randn(*s) / np.sqrt(s[0])).astype(dtype)
        self.W_q, self.W_k, self.W_v, self.W_o = (init(d_model, d_model) for _ in range(4))
        self.b_q, self.b_k, self.b_v, self.b_o = (np.zeros(d_model, dtype) for _ in range(4))
        self.mask = np.triu(np.ones((max_len, max_len), dtype=bool), k=1)   # True = future

    def dscores(self, a, da):                    # one head: back through softmax and the scale
        return a * (da - (da * a).sum(-1, keepdims=True)) / np.sqrt(self.d_k)

    def forward(self, x, training=False):
        B, T, D = x.shape
        self.x = x
        self.Q = x @ self.W_q + self.b_q
        self.K = x @ self.W_k + self.b_k
        self.V = x @ self.W_v + self.b_v
        self.attn_weights = np.zeros((B, self.h, T, T), dtype=x.dtype)
        self.concat = np.zeros_like(self.Q)
        for i in range(self.h):
            sl = slice(i * self.d_k, (i + 1) * self.d_k)
            s = self.Q[:, :, sl] @ self.K[:, :, sl].transpose(0, 2, 1) / np.sqrt(self.d_k)
            s = np.where(self.mask[:T, :T], -1e9, s)
            s = np.exp(s - s.max(axis=-1, keepdims=True))
            a = s / s.sum(axis=-1, keepdims=True)
            self.attn_weights[:, i] = a
            self.concat[:, :, sl] = a @ self.V[:, :, sl]
        return self.concat @ self.W_o + self.b_o

    def backward(self, dout):
        B, T, D = dout.shape
        flat = lambda a: a.reshape(-1, a.shape[-1])
        self.dW_o = flat(self.concat).T @ flat(dout)
        self.db_o = flat(dout).sum(0)
        dconcat = dout @ self.W_o.T
        dQ, dK, dV = np.zeros_like(self.Q), np.zeros_like(self.K), np.zeros_like(self.V)
        for i in range(self.h):
            sl = slice(i * self.d_k, (i + 1) * self.d_k)
            a = self.attn_weights[:, i]
            dc = dconcat[:, :, sl]
            dV[:, :, sl] = a.transpose(0, 2, 1) @ dc
            da = dc @ self.V[:, :, sl].transpose(0, 2, 1)
            ds = self.dscores(a, da)
            dQ[:, :, sl] = ds @ self.K[:, :, sl]
            dK[:, :, sl] = ds.transpose(0, 2, 1) @ self.Q[:, :, sl]
        self.dW_q, self.dW_k, self.dW_v = (flat(self.x).T @ flat(d) for d in (dQ, dK, dV))
        self.db_q, self.db_k, self.db_v = (flat(d).sum(0) for d in (dQ, dK, dV))
        return dQ @ self.W_q.T + dK @ self.W_k.T + dV @ self.W_v.T


def load(m, ref):
    W, b = ref["qkv_weight"], ref["qkv_bias"]
    D = W.shape[0]
    m.W_q[...], m.W_k[...], m.W_v[...] = W[:, :D], W[:, D:2 * D], W[:, 2 * D:]
    m.b_q[...], m.b_k[...], m.b_v[...] = b[:D], b[D:2 * D], b[2 * D:]
    m.W_o[...], m.b_o[...] = ref["out_weight"], ref["out_bias"]


@gradlab.register("attention", param_map=load)
def build(cfg):
    return MultiHeadAttention(cfg.d_model, cfg.num_heads, cfg.max_len, cfg.dtype)
