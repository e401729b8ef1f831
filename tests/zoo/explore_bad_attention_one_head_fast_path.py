"""Attention with a "fast path" for a single head that forgets the
1/sqrt(d_k) scale. Right at the default sizes (H = 2); wrong only when
num_heads == 1, and only visible when d_k > 1 (the scale is 1 at d_k = 1) and
T > 1 (a single position's weight is 1 whatever the scale). `--explore` finds
it and shrinks it to B=1, T=2, H=1, d_model=2."""
import math

import numpy as np

import gradlab
from gradlab.modules.attention import CausalSelfAttention
from gradlab.modules.functional import softmax


class FastPathAttention(CausalSelfAttention):
    def forward(self, x):
        if self.num_heads > 1:
            return super().forward(x)
        p = self.params
        T = x.shape[1]
        self.x = x
        q, k, v = np.split(x @ p["qkv_weight"] + p["qkv_bias"], 3, axis=-1)      # each (B, T, D)
        self.scale = 1.0                                         # the bug: should be 1 / sqrt(d_k)
        scores = q @ k.transpose(0, 2, 1) * self.scale
        scores = np.where(np.tril(np.ones((T, T), dtype=bool)), scores, -np.inf)
        self.attn_weights = softmax(scores, axis=-1)[:, None]    # (B, 1, T, T)
        self.q, self.k, self.v = q[:, None], k[:, None], v[:, None]
        self.ctx = (self.attn_weights @ self.v)[:, 0]             # (B, T, D)
        return self.ctx @ p["out_weight"] + p["out_bias"]


@gradlab.register("attention")
def build(cfg):
    return FastPathAttention(cfg.d_model, cfg.num_heads, dtype=cfg.dtype, seed=cfg.seed)
