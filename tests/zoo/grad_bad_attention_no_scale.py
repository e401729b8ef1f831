"""Broken: forward scales the scores by 1/sqrt(d_k), backward forgets to."""
import gradlab
from grad_ok_attention import StudentAttention


class NoScale(StudentAttention):
    def scores_backward(self, A, dA):
        return self.softmax_backward(A, dA)          # missing * self.scale


@gradlab.register("attention")
def build(cfg):
    return NoScale(cfg.d_model, cfg.num_heads, cfg.dtype)
