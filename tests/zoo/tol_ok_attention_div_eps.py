"""Correct (a sound idiom): the softmax divides by (sum + eps) and the mask is -1e9, as much
public NumPy attention code does (EPS; the tests write copies with 1e-12 ... 1e-7). Backward uses
the exact softmax Jacobian of the weights it kept."""
import numpy as np

import gradlab
from red_mod_attention_ok_einsum import CausalAttention

EPS = 1e-9


class EpsAttention(CausalAttention):
    def __init__(self, cfg, eps=EPS):
        super().__init__(cfg)
        self.eps = eps

    def mask(self, scores):
        T = scores.shape[-1]
        return np.where(np.tril(np.ones((T, T), dtype=bool)), scores, -1e9)

    def softmax(self, scores):
        e = np.exp(scores - scores.max(axis=-1, keepdims=True))
        return e / (e.sum(axis=-1, keepdims=True) + self.eps)


@gradlab.register("attention")
def build(cfg):
    return EpsAttention(cfg)
