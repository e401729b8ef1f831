"""Broken: attn_weights kept as (B*H, T, T) instead of (B, H, T, T)."""
import gradlab
from causality_ok_attention import StudentAttention


class FlatWeights(StudentAttention):
    def forward(self, x):
        out = super().forward(x)
        self.probs = self.attn_weights
        B, H, T, _ = self.probs.shape
        self.attn_weights = self.probs.reshape(B * H, T, T)
        return out

    def backward(self, grad_out):
        self.attn_weights = self.probs
        return super().backward(grad_out)


@gradlab.register("attention")
def build(cfg):
    return FlatWeights(cfg.d_model, cfg.num_heads, cfg.dtype)
