"""Correct: per-head weight lists, the way head-by-head tutorials write attention: W_q[h] (D, d_k) in a
plain list, its gradient in dW_q[h], heads computed in a loop; a param_map function loads the
reference's fused qkv_weight into the heads."""
import numpy as np

import gradlab


class HeadLists:
    def __init__(self, d, heads, dtype, seed):
        rng = np.random.default_rng(seed)
        self.h, self.dk = heads, d // heads
        for n in ("q", "k", "v"):
            setattr(self, "W_" + n, [(rng.standard_normal((d, self.dk)) / np.sqrt(d)).astype(dtype)
                                     for _ in range(heads)])
            setattr(self, "b_" + n, [np.zeros(self.dk, dtype) for _ in range(heads)])
        self.W_o, self.b_o = (rng.standard_normal((d, d)) / np.sqrt(d)).astype(dtype), np.zeros(d, dtype)

    def forward(self, x):
        self.x, T = x, x.shape[1]
        future = np.triu(np.ones((T, T), bool), k=1)
        self.heads, outs = [], []
        for h in range(self.h):
            q, k, v = (x @ getattr(self, "W_" + n)[h] + getattr(self, "b_" + n)[h] for n in "qkv")
            s = np.where(future, -np.inf, q @ np.swapaxes(k, 1, 2) / np.sqrt(self.dk))
            a = np.exp(s - s.max(-1, keepdims=True))
            a /= a.sum(-1, keepdims=True)
            self.heads.append((q, k, v, a))
            outs.append(a @ v)
        self.attn_weights = np.stack([a for *_, a in self.heads], axis=1)
        self.ctx = np.concatenate(outs, axis=-1)
        return self.ctx @ self.W_o + self.b_o

    def backward(self, g):
        D = g.shape[-1]
        x2 = self.x.reshape(-1, D)
        self.dW_o, self.db_o = self.ctx.reshape(-1, D).T @ g.reshape(-1, D), g.reshape(-1, D).sum(0)
        dctx = g @ self.W_o.T
        grads = {n: [] for n in ("dW_q", "dW_k", "dW_v", "db_q", "db_k", "db_v")}
        dx = np.zeros_like(self.x)
        for h, (q, k, v, a) in enumerate(self.heads):
            dout = dctx[..., h * self.dk:(h + 1) * self.dk]
            da = dout @ np.swapaxes(v, 1, 2)
            ds = a * (da - (da * a).sum(-1, keepdims=True)) / np.sqrt(self.dk)
            dq, dk, dv = ds @ k, np.swapaxes(ds, 1, 2) @ q, np.swapaxes(a, 1, 2) @ dout
            for n, d in zip("qkv", self.head_grads(dq, dk, dv)):
                grads["dW_" + n].append(x2.T @ d.reshape(-1, self.dk))
                grads["db_" + n].append(d.reshape(-1, self.dk).sum(0))
            dx += dq @ self.W_q[h].T + dk @ self.W_k[h].T + dv @ self.W_v[h].T
        for name, value in grads.items():
            setattr(self, name, value)
        return dx

    @staticmethod
    def head_grads(dq, dk, dv):
        return dq, dk, dv


def load(module, ref):
    D, dk = module.W_o.shape[0], module.dk
    for h in range(module.h):
        for i, n in enumerate("qkv"):
            cols = slice(i * D + h * dk, i * D + (h + 1) * dk)
            getattr(module, "W_" + n)[h][...] = ref["qkv_weight"][:, cols]
            getattr(module, "b_" + n)[h][...] = ref["qkv_bias"][cols]
    module.W_o[...], module.b_o[...] = ref["out_weight"], ref["out_bias"]


@gradlab.register("attention", param_map=load)
def build(cfg):
    return HeadLists(cfg.d_model, cfg.num_heads, cfg.dtype, cfg.seed)
