"""Broken: the softmax backward forgets the term that comes from the
normalisation: ds = A * dA instead of A * (dA - sum(dA * A))."""
import gradlab
from grad_ok_attention import StudentAttention


class MissingTerm(StudentAttention):
    def softmax_backward(self, A, dA):
        return A * dA


@gradlab.register("attention")
def build(cfg):
    return MissingTerm(cfg.d_model, cfg.num_heads, cfg.dtype)
