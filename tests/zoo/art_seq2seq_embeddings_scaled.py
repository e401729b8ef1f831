"""Not this kind's model: the embedding lookups are multiplied by sqrt(d_model), as the Transformer paper
writes them (backward scales their gradients the same way, so the gradient checks pass); article 000's
seq2seq, the contract's, adds the sinusoidal encoding to the plain lookup."""
import numpy as np

import gradlab
from art_parts import Seq2Seq, load_seq2seq, sinusoid


class Scaled(Seq2Seq):
    def forward(self, src, tgt):
        self.src, self.tgt = src, tgt
        r = np.sqrt(self.E_src.shape[1])
        m = self.E_src[src] * r + sinusoid(src.shape[1], self.E_src.shape[1])
        for layer in self.enc:
            m = layer.forward(m)
        h = self.E_tgt[tgt] * r + sinusoid(tgt.shape[1], self.E_tgt.shape[1])
        for layer in self.dec:
            h = layer.forward(h, m)
        self.h = h
        return h @ self.W_out + self.b_out

    def backward(self, g):
        super().backward(g)
        r = np.sqrt(self.E_src.shape[1])
        self.dE_src *= r
        self.dE_tgt *= r


@gradlab.register("seq2seq", param_map=load_seq2seq)
def build(cfg):
    return Scaled(cfg)
