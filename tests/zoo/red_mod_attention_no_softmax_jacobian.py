"""Broken: softmax backward keeps only the diagonal of the Jacobian: dscores = A * dA (the - sum(A * dA) term is missing)."""
import gradlab
from red_mod_attention_ok_einsum import CausalAttention


class NoSoftmaxJacobian(CausalAttention):
    def dscores(self, A, dA):
        return A * dA  # BUG: missing - (A * dA).sum(-1) / np.sqrt(self.dk)


@gradlab.register("attention")
def build(cfg):
    return NoSoftmaxJacobian(cfg)
