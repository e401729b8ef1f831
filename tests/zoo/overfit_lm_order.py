"""Broken: backward walks the blocks in forward order instead of reversed, and
forgets the output projection's share of the tied embedding gradient."""
import numpy as np

import gradlab
from overfit_lm_parts import LM


class WrongOrderLM(LM):
    def backward(self, dlogits):
        E = self.params["token_embedding"]
        dx = self.ln_f.backward(dlogits @ E)
        for block in self.blocks:
            dx = block.backward(dx)
        dE = np.zeros_like(E)
        np.add.at(dE, self.ids, dx)
        dP = np.zeros_like(self.params["pos_embedding"])
        dP[:self.ids.shape[1]] = dx.sum(0)
        self.grads["token_embedding"], self.grads["pos_embedding"] = dE, dP


@gradlab.register("lm")
def build(cfg):
    return WrongOrderLM(cfg)
