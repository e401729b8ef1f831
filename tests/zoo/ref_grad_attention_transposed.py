"""Broken backward: the out_weight gradient is computed as grad_out.T @ ctx (transposed)."""
import gradlab
from ref_parts import Attention


class TransposedGrad(Attention):
    def backward(self, g):
        dx = super().backward(g)
        D = g.shape[-1]
        self.grads["out_weight"] = g.reshape(-1, D).T @ self.ctx.reshape(-1, D)
        return dx


@gradlab.register("attention")
def build(cfg):
    return TransposedGrad(cfg.d_model, cfg.num_heads, cfg.dtype)
