"""Broken: the weights are kept as self.probs; there is no attn_weights attribute."""
import gradlab
from causality_ok_attention import StudentAttention


class NoAttnWeights(StudentAttention):
    def forward(self, x):
        out = super().forward(x)
        self.probs = self.__dict__.pop("attn_weights")
        return out

    def backward(self, grad_out):
        self.attn_weights = self.probs
        dx = super().backward(grad_out)
        del self.attn_weights
        return dx


@gradlab.register("attention")
def build(cfg):
    return NoAttnWeights(cfg.d_model, cfg.num_heads, cfg.dtype)
