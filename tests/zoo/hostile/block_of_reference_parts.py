"""A Pre-LN block of its own made of gradlab's reference LayerNorm, attention and
feed-forward: borrowing other kinds' references as parts counts as the student's
code (CONTRACT §4), so this passes."""
import gradlab
from gradlab.modules import attention, ffn, layernorm


class Block:
    def __init__(self, cfg):
        self.ln1 = layernorm.build(cfg)
        self.attn = attention.build(cfg.replace(seed=cfg.seed + 1))
        self.ln2 = layernorm.build(cfg.replace(seed=cfg.seed + 2))
        self.ffn = ffn.build(cfg.replace(seed=cfg.seed + 3))

    def forward(self, x):
        h = x + self.attn.forward(self.ln1.forward(x))
        return h + self.ffn.forward(self.ln2.forward(h))

    def backward(self, grad_out):
        dh = grad_out + self.ln2.backward(self.ffn.backward(grad_out))
        return dh + self.ln1.backward(self.attn.backward(dh))


@gradlab.register("block")
def build(cfg):
    return Block(cfg)
