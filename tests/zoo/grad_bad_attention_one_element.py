"""Broken in the smallest way: a correct attention whose backward returns one
element of qkv_weight's gradient off by 1e-4 relative (a stray term that only
touches one entry). WHERE says which."""
import gradlab
from grad_ok_attention import StudentAttention

WHERE = (3, 7)
R = 1e-4


class OneElementOff(StudentAttention):
    def backward(self, grad_out):
        dx = super().backward(grad_out)
        self.grads["qkv_weight"][WHERE] *= 1 + R
        return dx


@gradlab.register("attention")
def build(cfg):
    return OneElementOff(cfg.d_model, cfg.num_heads, cfg.dtype)
