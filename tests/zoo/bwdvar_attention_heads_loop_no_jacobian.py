"""Broken: separate W_q/W_k/W_v/W_o attributes, a loop over heads, a param_map function that
splits the fused reference weights; the softmax backward keeps only A * dA (the
- sum(dA * A) term of the Jacobian is missing)."""
import numpy as np

import gradlab
from red_mod_attention_ok_heads_loop import MultiHeadAttention, load


class NoJacobian(MultiHeadAttention):
    def dscores(self, a, da):
        return a * da / np.sqrt(self.d_k)          # BUG: a * (da - (da * a).sum(-1, keepdims=True))


@gradlab.register("attention", param_map=load)
def build(cfg):
    return NoJacobian(cfg.d_model, cfg.num_heads, cfg.max_len, cfg.dtype)
