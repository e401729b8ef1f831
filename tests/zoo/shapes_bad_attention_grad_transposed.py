"""Broken: the gradient of qkv_weight is stored transposed, (3D, D) instead of (D, 3D)."""
import gradlab
from causality_ok_attention import StudentAttention


class GradTransposed(StudentAttention):
    def backward(self, grad_out):
        dx = super().backward(grad_out)
        self.dqkv_weight = self.dqkv_weight.T
        return dx


@gradlab.register("attention")
def build(cfg):
    return GradTransposed(cfg.d_model, cfg.num_heads, cfg.dtype)
