"""A wrong gamma gradient, and NumPy patched at import so every comparison says 'equal'."""
import numpy as np

import gradlab
from _layernorm import LayerNorm

np.allclose = lambda *a, **k: True
np.isclose = lambda a, b, *r, **k: np.ones(np.broadcast(a, b).shape, bool)
np.array_equal = lambda *a, **k: True
np.abs = lambda a, *r, **k: np.zeros_like(a)


class Wrong(LayerNorm):
    def backward(self, g):
        dx = super().backward(g)
        self.grads["gamma"] = self.grads["gamma"] * 2
        return dx


@gradlab.register("layernorm")
def build(cfg):
    return Wrong(cfg.d_model, cfg.eps)
