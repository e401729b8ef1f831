"""A student's whole language model, written only against CONTRACT.md from the
parts in ref_parts.py: token and positional embeddings, Pre-LN blocks, a final
LayerNorm and the output projection tied to the token embedding. Registers
nothing itself."""
import numpy as np

from ref_parts import Block, LayerNorm


class LM:
    def __init__(self, cfg):
        rng = np.random.default_rng(cfg.seed)
        V, D = cfg.vocab_size, cfg.d_model
        self.params = {"token_embedding": (rng.normal(size=(V, D)) / np.sqrt(D)).astype(cfg.dtype),
                       "pos_embedding": (rng.normal(size=(cfg.max_len, D)) / np.sqrt(D)).astype(cfg.dtype)}
        self.grads = {}
        self.blocks = [Block(cfg, seed=i) for i in range(cfg.n_layers)]
        self.ln_f = LayerNorm(D, cfg.eps, cfg.dtype)

    def forward(self, ids):
        E, P = self.params["token_embedding"], self.params["pos_embedding"]
        self.ids = ids
        x = E[ids] + P[:ids.shape[1]]
        for block in self.blocks:
            x = block.forward(x)
        self.h = self.ln_f.forward(x)
        return self.h @ E.T

    def backward_blocks(self, dx):
        for block in reversed(self.blocks):
            dx = block.backward(dx)
        return dx

    def backward(self, dlogits):
        E = self.params["token_embedding"]
        V, D = E.shape
        dE = dlogits.reshape(-1, V).T @ self.h.reshape(-1, D)
        dx = self.backward_blocks(self.ln_f.backward(dlogits @ E))
        np.add.at(dE, self.ids, dx)
        dP = np.zeros_like(self.params["pos_embedding"])
        dP[:self.ids.shape[1]] = dx.sum(0)
        self.grads["token_embedding"], self.grads["pos_embedding"] = dE, dP
