"""Broken: attention whose backward returns -dL/dx (a sign slip in the last line):
its own parameter gradients are right, everything below it is pushed uphill."""
import gradlab
from ref_parts import Attention


class SignSlipAttention(Attention):
    def backward(self, g):
        return -super().backward(g)


@gradlab.register("attention")
def build(cfg):
    return SignSlipAttention(cfg.d_model, cfg.num_heads, cfg.dtype)
