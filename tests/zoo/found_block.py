"""A student's Pre-LN block built from the parts in a sibling file (the way a
student splits an assignment over files): gradlab must walk the children and
name their parameters ln1.gamma, attn.qkv_weight, ffn.w1, ..."""
import numpy as np

import gradlab
from found_parts import Attention, FeedForward, LayerNorm


class Block:
    def __init__(self, cfg):
        rng = np.random.default_rng(cfg.seed)
        self.ln1 = LayerNorm(cfg.d_model, cfg.eps)
        self.attn = Attention(cfg.d_model, cfg.num_heads, rng)
        self.ln2 = LayerNorm(cfg.d_model, cfg.eps)
        self.ffn = FeedForward(cfg.d_model, cfg.d_ff, rng, cfg.activation)

    def forward(self, x):
        h = x + self.attn.forward(self.ln1.forward(x))
        return h + self.ffn.forward(self.ln2.forward(h))

    def backward(self, dy):
        dh = dy + self.ln2.backward(self.ffn.backward(dy))
        return dh + self.ln1.backward(self.attn.backward(dh))


@gradlab.register("block")
def build(cfg):
    return Block(cfg)
