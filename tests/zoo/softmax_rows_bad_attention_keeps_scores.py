"""Broken: attn_weights keeps the masked scores, not the softmax output."""
import gradlab
from causality_ok_attention import StudentAttention


class KeepsScores(StudentAttention):
    def weights(self, scores):
        masked = self.mask(scores)
        probs = self.softmax(masked)
        self.kept = masked
        return probs

    def forward(self, x):
        out = super().forward(x)
        self.probs, self.attn_weights = self.attn_weights, self.kept
        return out

    def backward(self, grad_out):
        self.attn_weights = self.probs
        dx = super().backward(grad_out)
        self.attn_weights = self.kept
        return dx


@gradlab.register("attention")
def build(cfg):
    return KeepsScores(cfg.d_model, cfg.num_heads, cfg.dtype)
