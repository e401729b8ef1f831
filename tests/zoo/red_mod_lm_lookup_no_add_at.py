"""Broken: the lookup path adds with dE[ids] += dx, which keeps one occurrence per repeated id (np.add.at needed); the output path is right."""
import numpy as np

import gradlab
from red_mod_lm_ok_tied import TinyLM


class NoAddAtLM(TinyLM):
    def backward(self, dlogits):
        E = self.params["token_embedding"]
        V, D = E.shape
        dE = dlogits.reshape(-1, V).T @ self.hf.reshape(-1, D)
        dx = self.ln_f.backward(dlogits @ E)
        for blk in self.blocks[::-1]:
            dx = blk.backward(dx)
        dE[self.ids] += dx          # BUG: np.add.at(dE, self.ids, dx)
        dP = np.zeros_like(self.params["pos_embedding"])
        dP[:self.ids.shape[1]] = dx.sum(0)
        self.grads["token_embedding"], self.grads["pos_embedding"] = dE, dP


@gradlab.register("lm")
def build(cfg):
    return NoAddAtLM(cfg)
