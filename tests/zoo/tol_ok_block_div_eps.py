"""Correct (a sound idiom, inside a part): a Pre-LN block whose attention normalises by (sum + eps), eps
1e-7 (EPS; the tests write copies with other values). The gradient check finds the attention's kept
weights on the block's part and allows what the eps can change."""
import numpy as np
import gradlab
import red_mod_parts as parts

EPS = 1e-7


class EpsAttention(parts.Attention):
    def forward(self, x):
        super().forward(x)                # for q, k, v; then the softmax again, with the eps
        B, T, D = x.shape
        s = self.q @ self.k.transpose(0, 1, 3, 2) / np.sqrt(D // self.H)
        s = s + np.triu(np.full((T, T), -1e9, dtype=x.dtype), 1)
        e = np.exp(s - s.max(-1, keepdims=True))
        self.attn_weights = e / (e.sum(-1, keepdims=True) + EPS)
        self.ctx = (self.attn_weights @ self.v).transpose(0, 2, 1, 3).reshape(B, T, D)
        return self.ctx @ self.params["out_weight"] + self.params["out_bias"]


class Block(parts.Block):
    def __init__(self, cfg, rng):
        super().__init__(cfg, rng)
        old = self.attn
        self.attn = EpsAttention(cfg.d_model, cfg.num_heads, rng, cfg.dtype)
        self.attn.params = old.params


@gradlab.register("block")
def build(cfg):
    return Block(cfg, np.random.default_rng(cfg.seed))
