"""Broken twin: the softmax backward drops the Jacobian's second term
(dscores = A * dA instead of A * (dA - sum(dA * A)))."""
import gradlab
from style_parameter_objects import CausalSelfAttention


class NoJacobian(CausalSelfAttention):
    @staticmethod
    def softmax_backward(A, dA):
        return A * dA                                  # BUG: - sum(dA * A, -1) is missing


@gradlab.register("attention")
def build(cfg):
    return NoJacobian(cfg.d_model, cfg.num_heads, cfg.dtype, cfg.seed)
