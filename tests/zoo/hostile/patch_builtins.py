"""A wrong gamma gradient, and builtins patched at import (float, abs, max, isinstance)."""
import builtins

import gradlab
from _layernorm import LayerNorm


class _AllGood(float):
    pass


_float = builtins.float
builtins.abs = lambda x: 0.0
builtins.max = lambda *a, **k: 0.0
builtins.float = lambda *a: _AllGood(_float(*a)) if a else _AllGood(0.0)


class Wrong(LayerNorm):
    def backward(self, g):
        dx = super().backward(g)
        self.grads["gamma"] = self.grads["gamma"] * 2
        return dx


@gradlab.register("layernorm")
def build(cfg):
    return Wrong(cfg.d_model, cfg.eps)
