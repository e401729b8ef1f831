"""Broken: out_weight's gradient is transposed (grad_out.T @ ctx). out_weight is
square (D, D), so the shape is right and only the numbers are wrong."""
import gradlab
from grad_ok_attention import StudentAttention


class Transposed(StudentAttention):
    def out_weight_grad(self, grad_out):
        D = grad_out.shape[-1]
        return grad_out.reshape(-1, D).T @ self.ctx.reshape(-1, D)


@gradlab.register("attention")
def build(cfg):
    return Transposed(cfg.d_model, cfg.num_heads, cfg.dtype)
