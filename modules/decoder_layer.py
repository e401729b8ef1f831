"""Post-LN Transformer decoder layer: masked self-attention, cross-attention over the encoder's
memory, ReLU FFN, each followed by a residual and a LayerNorm (as article 000's encoder layer)."""
import numpy as np

import gradlab

from .attention import CausalSelfAttention
from .cross_attention import CrossAttention
from .ffn import FeedForward
from .layernorm import LayerNorm


class DecoderLayer:
    """forward(x (B, T, D), memory (B, S, D), key_padding_mask (B, S) or None) -> (B, T, D);
    backward(g) -> (dx, dmemory). Position t sees x at positions <= t only, and all of memory."""

    def __init__(self, d_model, num_heads, d_ff, eps=1e-5, dtype="float64", seed=0):
        rng = np.random.default_rng(seed)
        self.self_attn = CausalSelfAttention(d_model, num_heads, dtype=dtype, seed=rng)
        self.ln1 = LayerNorm(d_model, eps=eps, dtype=dtype, seed=rng)
        self.cross_attn = CrossAttention(d_model, num_heads, dtype=dtype, seed=rng)
        self.ln2 = LayerNorm(d_model, eps=eps, dtype=dtype, seed=rng)
        self.ffn = FeedForward(d_model, d_ff, activation="relu", dtype=dtype, seed=rng)
        self.ln3 = LayerNorm(d_model, eps=eps, dtype=dtype, seed=rng)

    def forward(self, x, memory, key_padding_mask=None):
        h1 = self.ln1.forward(x + self.self_attn.forward(x))                                   # (B, T, D)
        h2 = self.ln2.forward(h1 + self.cross_attn.forward(h1, memory, key_padding_mask))      # (B, T, D)
        return self.ln3.forward(h2 + self.ffn.forward(h2))                                     # (B, T, D)

    def backward(self, grad_out):                   # -> (dx, dmemory)
        ds3 = self.ln3.backward(grad_out)
        dh2 = ds3 + self.ffn.backward(ds3)                       # residual + FFN branch
        ds2 = self.ln2.backward(dh2)
        dq_side, dmemory = self.cross_attn.backward(ds2)
        dh1 = ds2 + dq_side
        ds1 = self.ln1.backward(dh1)
        return ds1 + self.self_attn.backward(ds1), dmemory


@gradlab.register("decoder_layer")
def build(cfg):
    return DecoderLayer(cfg.d_model, cfg.num_heads, cfg.d_ff, eps=cfg.eps, dtype=cfg.dtype, seed=cfg.seed)
