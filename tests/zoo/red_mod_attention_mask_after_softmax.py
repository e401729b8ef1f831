"""Broken: the causal mask is applied after the softmax (weights zeroed, rows no longer sum to 1); backward consistent with it."""
import numpy as np

import gradlab
from red_mod_attention_ok_einsum import CausalAttention


class MaskAfterSoftmax(CausalAttention):
    def mask(self, scores):
        return scores

    def softmax(self, scores):
        T = scores.shape[-1]
        self.A_full = super().softmax(scores)
        return self.A_full * np.tril(np.ones((T, T)))   # BUG: mask after softmax

    def dscores(self, A, dA):
        T = A.shape[-1]
        return self.A_full * (dA * np.tril(np.ones((T, T))) - (self.A_full * dA * np.tril(np.ones((T, T)))).sum(axis=-1, keepdims=True)) / np.sqrt(self.dk)


@gradlab.register("attention")
def build(cfg):
    return MaskAfterSoftmax(cfg)
