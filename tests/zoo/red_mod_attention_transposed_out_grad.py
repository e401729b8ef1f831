"""Broken: the out_weight gradient is computed as dout.T @ ctx (transposed; out_weight is square so the shape is right)."""
import numpy as np

import gradlab
from red_mod_attention_ok_einsum import CausalAttention


class TransposedOutGrad(CausalAttention):
    def backward(self, dout):
        dx = super().backward(dout)
        self.grads["out_weight"] = np.einsum("bte,btd->de", self.ctx, dout)  # BUG: transposed
        return dx


@gradlab.register("attention")
def build(cfg):
    return TransposedOutGrad(cfg)
