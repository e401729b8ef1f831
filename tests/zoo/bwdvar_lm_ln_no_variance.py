"""Broken: a tied-embedding LM from the student's own parts (red_mod_parts.py), every LayerNorm
(the blocks' and the final one) with a backward that leaves out the variance term."""
import numpy as np

import gradlab
import red_mod_parts
from red_mod_parts import Block


class LayerNorm(red_mod_parts.LayerNorm):
    def backward(self, dy):
        D = dy.shape[-1]
        self.dgamma = (dy * self.xhat).reshape(-1, D).sum(0)
        self.dbeta = dy.reshape(-1, D).sum(0)
        dxh = dy * self.gamma
        return self.rstd * (dxh - dxh.mean(-1, keepdims=True))        # BUG: - xhat * mean(dxh * xhat) missing


class TinyLM:
    def __init__(self, cfg):
        rng = np.random.default_rng(cfg.seed)
        V, D = cfg.vocab_size, cfg.d_model
        self.params = {"token_embedding": (0.5 * rng.standard_normal((V, D))).astype(cfg.dtype),
                       "pos_embedding": (0.5 * rng.standard_normal((cfg.max_len, D))).astype(cfg.dtype)}
        self.grads = {}
        self.blocks = [Block(cfg, rng) for _ in range(cfg.n_layers)]
        for blk in self.blocks:
            blk.ln1.__class__ = blk.ln2.__class__ = LayerNorm
        self.ln_f = LayerNorm(D, cfg.eps, cfg.dtype)

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
        dE = np.einsum("btv,btd->vd", dlogits, self.hf)
        dx = self.ln_f.backward(dlogits @ E)
        for blk in reversed(self.blocks):
            dx = blk.backward(dx)
        np.add.at(dE, self.ids, dx)
        dP = np.zeros_like(self.params["pos_embedding"])
        dP[:self.ids.shape[1]] = dx.sum(0)
        self.grads["token_embedding"], self.grads["pos_embedding"] = dE, dP


@gradlab.register("lm")
def build(cfg):
    return TinyLM(cfg)
