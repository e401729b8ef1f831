"""Decoder-only transformer language model with a tied output projection."""
import numpy as np

import gradlab

from .block import TransformerBlock
from .layernorm import LayerNorm


class TransformerLM:
    """ids int (B, T) -> logits (B, T, V).

    x = token_embedding[ids] + pos_embedding[:T] -> blocks -> ln_f -> x @ token_embedding.T.
    The token embedding is used twice (lookup and output), so its gradient is the sum of both paths."""

    def __init__(self, vocab_size, d_model, num_heads, d_ff, n_layers, max_len,
                 eps=1e-5, activation="gelu", dtype="float64", seed=0):
        rng = np.random.default_rng(seed)
        self.params = {
            "token_embedding": (rng.standard_normal((vocab_size, d_model)) / np.sqrt(d_model)).astype(dtype),
            "pos_embedding": (rng.standard_normal((max_len, d_model)) / np.sqrt(d_model)).astype(dtype),
        }
        self.grads = {k: np.zeros_like(v) for k, v in self.params.items()}
        self.blocks = [TransformerBlock(d_model, num_heads, d_ff, eps=eps, activation=activation,
                                        dtype=dtype, seed=rng) for _ in range(n_layers)]
        self.ln_f = LayerNorm(d_model, eps=eps, dtype=dtype, seed=rng)

    def forward(self, ids):                                     # ids (B, T) int
        E, P = self.params["token_embedding"], self.params["pos_embedding"]
        T = ids.shape[1]
        assert T <= P.shape[0], f"sequence length {T} is longer than max_len={P.shape[0]}"
        self.ids = ids
        x = E[ids] + P[:T]                                      # (B, T, D)
        for block in self.blocks:
            x = block.forward(x)                                # (B, T, D)
        self.h = self.ln_f.forward(x)                           # (B, T, D)
        return self.h @ E.T                                     # (B, T, V)

    def backward(self, grad_logits):                           # grad_logits (B, T, V)
        E = self.params["token_embedding"]
        V, D = E.shape
        dE = grad_logits.reshape(-1, V).T @ self.h.reshape(-1, D)   # (V, D), output path
        dx = self.ln_f.backward(grad_logits @ E)                # (B, T, D)
        for block in reversed(self.blocks):
            dx = block.backward(dx)                             # (B, T, D)
        np.add.at(dE, self.ids, dx)                             # lookup path; repeated ids accumulate
        dP = np.zeros_like(self.params["pos_embedding"])        # (max_len, D)
        dP[:self.ids.shape[1]] = dx.sum(axis=0)                 # (T, D)
        self.grads["token_embedding"], self.grads["pos_embedding"] = dE, dP
        return None                                             # ids are not differentiable


@gradlab.register("lm")
def build(cfg):
    return TransformerLM(cfg.vocab_size, cfg.d_model, cfg.num_heads, cfg.d_ff, cfg.n_layers, cfg.max_len,
                         eps=cfg.eps, activation=cfg.activation, dtype=cfg.dtype, seed=cfg.seed)
