"""Broken: no causal mask at all; every position attends to the future."""
import gradlab
from causality_ok_attention import StudentAttention


class NoMask(StudentAttention):
    def mask(self, scores):
        return scores


@gradlab.register("attention")
def build(cfg):
    return NoMask(cfg.d_model, cfg.num_heads, cfg.dtype)
