"""Token embedding: a lookup table indexed by integer token ids."""
import numpy as np

import gradlab


class Embedding:
    """ids int (B, T) -> weight[ids] (B, T, D). weight (V, D)."""

    def __init__(self, vocab_size, d_model, dtype="float64", seed=0):
        rng = np.random.default_rng(seed)
        weight = rng.standard_normal((vocab_size, d_model)) / np.sqrt(d_model)
        self.params = {"weight": weight.astype(dtype)}
        self.grads = {"weight": np.zeros_like(self.params["weight"])}

    def forward(self, ids):                     # ids (B, T) int
        self.ids = ids
        return self.params["weight"][ids]       # (B, T, D), a copy (fancy indexing)

    def backward(self, grad_out):               # grad_out (B, T, D)
        dW = np.zeros_like(self.params["weight"])               # (V, D)
        # np.add.at, not dW[ids] += g: a token that appears twice must get both gradients.
        np.add.at(dW, self.ids, grad_out)
        self.grads["weight"] = dW
        return None                             # ids are not differentiable


@gradlab.register("embedding")
def build(cfg):
    return Embedding(cfg.vocab_size, cfg.d_model, dtype=cfg.dtype, seed=cfg.seed)
