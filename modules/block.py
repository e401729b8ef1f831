"""Pre-LN transformer block: x + attn(ln1(x)), then x + ffn(ln2(x))."""
import numpy as np

import gradlab

from .attention import CausalSelfAttention
from .ffn import FeedForward
from .layernorm import LayerNorm


class TransformerBlock:
    """x (B, T, D) -> (B, T, D). Children ln1, attn, ln2, ffn hold the parameters
    (gradlab names them ln1.gamma, attn.qkv_weight, ...)."""

    def __init__(self, d_model, num_heads, d_ff, eps=1e-5, activation="gelu", dtype="float64", seed=0):
        rng = np.random.default_rng(seed)   # one stream, so the children get different weights
        self.ln1 = LayerNorm(d_model, eps=eps, dtype=dtype, seed=rng)
        self.attn = CausalSelfAttention(d_model, num_heads, dtype=dtype, seed=rng)
        self.ln2 = LayerNorm(d_model, eps=eps, dtype=dtype, seed=rng)
        self.ffn = FeedForward(d_model, d_ff, activation=activation, dtype=dtype, seed=rng)

    def forward(self, x):                                       # x (B, T, D)
        h = x + self.attn.forward(self.ln1.forward(x))          # (B, T, D)
        return h + self.ffn.forward(self.ln2.forward(h))        # (B, T, D)

    def backward(self, grad_out):                               # grad_out (B, T, D)
        # each residual adds the gradient through the branch to the gradient that skips it
        dh = grad_out + self.ln2.backward(self.ffn.backward(grad_out))
        return dh + self.ln1.backward(self.attn.backward(dh))   # (B, T, D)


@gradlab.register("block")
def build(cfg):
    return TransformerBlock(cfg.d_model, cfg.num_heads, cfg.d_ff, eps=cfg.eps,
                            activation=cfg.activation, dtype=cfg.dtype, seed=cfg.seed)
