"""Correct: a tied-embedding LM from the student's own parts (red_mod_parts.py); the embedding gradient sums the output projection path and the lookup path (np.add.at)."""
import numpy as np

import gradlab
from red_mod_parts import Block, LayerNorm


class TinyLM:
    def __init__(self, cfg):
        rng = np.random.default_rng(cfg.seed)
        self.params = {"token_embedding": (0.5 * rng.standard_normal((cfg.vocab_size, cfg.d_model))).astype(cfg.dtype),
                       "pos_embedding": (0.5 * rng.standard_normal((cfg.max_len, cfg.d_model))).astype(cfg.dtype)}
        self.grads = {}
        self.blocks = [Block(cfg, rng) for _ in range(cfg.n_layers)]
        self.ln_f = LayerNorm(cfg.d_model, cfg.eps, cfg.dtype)

    def forward(self, ids):
        E, P = self.params["token_embedding"], self.params["pos_embedding"]
        self.ids = ids
        x = E[ids] + P[:ids.shape[1]]
        for blk in self.blocks:
            x = blk.forward(x)
        self.hf = self.ln_f.forward(x)
        return self.hf @ E.T

    def backward(self, dlogits):
        E = self.params["token_embedding"]
        V, D = E.shape
        dE = np.einsum('btv,btd->vd', dlogits, self.hf)
        dx = self.ln_f.backward(dlogits @ E)
        for blk in self.blocks[::-1]:
            dx = blk.backward(dx)
        np.add.at(dE, self.ids, dx)
        dP = np.zeros_like(self.params["pos_embedding"])
        dP[:self.ids.shape[1]] = dx.sum(0)
        self.grads["token_embedding"], self.grads["pos_embedding"] = dE, dP


@gradlab.register("lm")
def build(cfg):
    return TinyLM(cfg)
