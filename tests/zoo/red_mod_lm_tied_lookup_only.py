"""Broken: tied embeddings, but backward keeps only the lookup path's gradient; the output projection's logits.T @ h contribution to token_embedding is missing."""
import numpy as np

import gradlab
from red_mod_lm_ok_tied import TinyLM


class LookupOnlyLM(TinyLM):
    def backward(self, dlogits):
        E = self.params["token_embedding"]
        dE = np.zeros_like(E)          # BUG: the output projection's gradient dlogits.T @ h is never added
        dx = self.ln_f.backward(dlogits @ E)
        for blk in self.blocks[::-1]:
            dx = blk.backward(dx)
        np.add.at(dE, self.ids, dx)
        dP = np.zeros_like(self.params["pos_embedding"])
        dP[:self.ids.shape[1]] = dx.sum(0)
        self.grads["token_embedding"], self.grads["pos_embedding"] = dE, dP


@gradlab.register("lm")
def build(cfg):
    return LookupOnlyLM(cfg)
