"""Correct in its gradients (the idiom under test; the gradient check only): multi-head causal attention
with separate Wq, Wk, Wv and no output projection (not the contract's attention: `shapes` counts 432 numbers
of 624), the -1e9 mask, and a softmax that divides by (sum + EPS) after subtracting the row's max. Backward
is the usual one (A * (dA - sum(A * dA))), which leaves out the eps / sum term that the max subtraction adds
to the true gradient: gradlab must allow for it (tolerance.idiom_allowance). With no output projection, no
large gradient dilutes that term in the joint direction."""
import numpy as np

import gradlab

EPS = 1e-7


class HeadsOnly:
    def __init__(self, cfg):
        rng = np.random.default_rng(cfg.seed)
        D = cfg.d_model
        self.H, self.dk = cfg.num_heads, D // cfg.num_heads
        self.params = {name: (rng.standard_normal((D, D)) / np.sqrt(D)).astype(cfg.dtype) for name in ("Wq", "Wk", "Wv")}
        self.grads = {}

    def _heads(self, a):                     # (B, T, D) -> (B, H, T, dk)
        B, T, _ = a.shape
        return a.reshape(B, T, self.H, self.dk).transpose(0, 2, 1, 3)

    def _merge(self, a):                     # (B, H, T, dk) -> (B, T, D)
        B, H, T, dk = a.shape
        return a.transpose(0, 2, 1, 3).reshape(B, T, H * dk)

    def forward(self, x):
        P, T = self.params, x.shape[1]
        self.x = x
        self.q, self.k, self.v = (self._heads(x @ P[name]) for name in ("Wq", "Wk", "Wv"))
        scores = self.q @ self.k.transpose(0, 1, 3, 2) / np.sqrt(self.dk)
        scores = np.where(np.tril(np.ones((T, T), dtype=bool)), scores, -1e9)
        e = np.exp(scores - scores.max(axis=-1, keepdims=True))
        self.attn_weights = e / (e.sum(axis=-1, keepdims=True) + EPS)
        return self._merge(self.attn_weights @ self.v)

    def backward(self, dout):
        A, D = self.attn_weights, dout.shape[-1]
        dctx = self._heads(dout)
        dA = dctx @ self.v.transpose(0, 1, 3, 2)
        dscores = A * (dA - (A * dA).sum(axis=-1, keepdims=True)) / np.sqrt(self.dk)
        dq, dk, dv = (self._merge(a) for a in (dscores @ self.k, dscores.transpose(0, 1, 3, 2) @ self.q,
                                                A.transpose(0, 1, 3, 2) @ dctx))
        X = self.x.reshape(-1, D)
        self.grads = {name: X.T @ d.reshape(-1, D) for name, d in (("Wq", dq), ("Wk", dk), ("Wv", dv))}
        P = self.params
        return dq @ P["Wq"].T + dk @ P["Wk"].T + dv @ P["Wv"].T


@gradlab.register("attention")
def build(cfg):
    return HeadsOnly(cfg)
