"""Broken in the smallest way, beside a sound idiom: the e / (sum + 1e-7) attention whose gradient of
qkv_weight is off by a relative 1e-3 in one element."""
import numpy as np

import gradlab
from red_mod_attention_ok_einsum import CausalAttention

WHERE = (3, 7)


class OneOff(CausalAttention):
    def mask(self, scores):
        T = scores.shape[-1]
        return np.where(np.tril(np.ones((T, T), dtype=bool)), scores, -1e9)

    def softmax(self, scores):
        e = np.exp(scores - scores.max(axis=-1, keepdims=True))
        return e / (e.sum(axis=-1, keepdims=True) + 1e-7)

    def backward(self, dout):
        dx = super().backward(dout)
        self.grads["qkv_weight"][WHERE] *= 1 + 1e-3
        return dx


@gradlab.register("attention")
def build(cfg):
    return OneOff(cfg)
