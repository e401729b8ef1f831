"""Broken inside the encoder only: its FFN's backward multiplies by the activation relu(h) instead of
the ReLU derivative (h > 0). dmemory is right (the last encoder layer's FFN output weights get right
gradients); the encoder's backward goes wrong below them."""
import numpy as np

import gradlab
from art_parts import ReluFFN, Seq2Seq, load_seq2seq


class ActivationTimesGrad(ReluFFN):
    def backward(self, g):
        D = g.shape[-1]
        a = np.maximum(self.h, 0)
        self.dW2, self.db2 = a.reshape(-1, a.shape[-1]).T @ g.reshape(-1, D), g.reshape(-1, D).sum(0)
        dh = (g @ self.W2.T) * a                  # BUG: the activation, not its derivative (h > 0)
        self.dW1 = self.x.reshape(-1, D).T @ dh.reshape(-1, dh.shape[-1])
        self.db1 = dh.reshape(-1, dh.shape[-1]).sum(0)
        return dh @ self.W1.T


@gradlab.register("seq2seq", param_map=load_seq2seq)
def build(cfg):
    model = Seq2Seq(cfg)
    for layer in model.enc:
        layer.ffn.__class__ = ActivationTimesGrad
    return model
