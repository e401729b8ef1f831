"""The causal mask is built once for cfg.seq_len and sliced to T: shorter inputs work, but not the longer ones
up to max_len that the positions allow (an LM generating past the training length)."""
import numpy as np

import gradlab
from causality_ok_attention import StudentAttention


class MaskForSeqLen(StudentAttention):
    def __init__(self, cfg):
        super().__init__(cfg.d_model, cfg.num_heads, cfg.dtype)
        self.future = np.triu(np.ones((cfg.seq_len, cfg.seq_len), dtype=bool), k=1)

    def mask(self, scores):
        T = scores.shape[-1]
        return np.where(self.future[:T, :T], -1e9, scores)


@gradlab.register("attention")
def build(cfg):
    return MaskForSeqLen(cfg)
