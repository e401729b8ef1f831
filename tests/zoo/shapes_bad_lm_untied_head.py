"""Not the contract's LM: the output head is a copy of the embedding (untied), with a gradient of its own."""
import numpy as np

import gradlab
from red_mod_lm_ok_tied import TinyLM


class Untied(TinyLM):
    def __init__(self, cfg):
        super().__init__(cfg)
        self.params["lm_head"] = self.params["token_embedding"].T.copy()   # NOT tied: a (D, V) array of its own

    def forward(self, ids):
        E, P = self.params["token_embedding"], self.params["pos_embedding"]
        self.ids = ids
        x = E[ids] + P[:ids.shape[1]]
        for blk in self.blocks:
            x = blk.forward(x)
        self.hf = self.ln_f.forward(x)
        return self.hf @ self.params["lm_head"]

    def backward(self, dlogits):
        self.grads["lm_head"] = np.einsum('btd,btv->dv', self.hf, dlogits)
        dx = self.ln_f.backward(dlogits @ self.params["lm_head"].T)
        for blk in self.blocks[::-1]:
            dx = blk.backward(dx)
        dE = np.zeros_like(self.params["token_embedding"])
        np.add.at(dE, self.ids, dx)
        dP = np.zeros_like(self.params["pos_embedding"])
        dP[:self.ids.shape[1]] = dx.sum(0)
        self.grads["token_embedding"], self.grads["pos_embedding"] = dE, dP


@gradlab.register("lm")
def build(cfg):
    return Untied(cfg)
