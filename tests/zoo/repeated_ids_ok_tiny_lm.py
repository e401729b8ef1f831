"""A deliberately tiny "lm": embeddings, a position-wise tanh and the tied
output projection, no attention blocks. Correct in what it has (the embedding
gradient, causality), which is all repeated_ids and causality look at; `shapes`
rightly reports the missing blocks. Subclasses plant one bug each."""
import numpy as np

import gradlab


class TinyLM:
    def __init__(self, V, D, max_len, dtype):
        rng = np.random.default_rng(11)
        self.params = {"token_embedding": (rng.standard_normal((V, D)) * 0.3).astype(dtype),
                       "pos_embedding": (rng.standard_normal((max_len, D)) * 0.3).astype(dtype)}
        self.grads = {}

    def mix(self, x):               # position-wise: causal by construction
        return x

    def unmix(self, g):
        return g

    def forward(self, ids):
        E, P = self.params["token_embedding"], self.params["pos_embedding"]
        self.ids = ids
        self.h = np.tanh(self.mix(E[ids] + P[:ids.shape[1]]))
        return self.h @ E.T

    def embed_grad(self, dE, dx):
        np.add.at(dE, self.ids, dx)

    def backward(self, g):
        E = self.params["token_embedding"]
        V, D = E.shape
        dE = g.reshape(-1, V).T @ self.h.reshape(-1, D)
        dx = self.unmix((g @ E) * (1 - self.h ** 2))
        self.embed_grad(dE, dx)
        dP = np.zeros_like(self.params["pos_embedding"])
        dP[:dx.shape[1]] = dx.sum(0)
        self.grads["token_embedding"], self.grads["pos_embedding"] = dE, dP


@gradlab.register("lm")
def build(cfg):
    return TinyLM(cfg.vocab_size, cfg.d_model, cfg.max_len, cfg.dtype)
