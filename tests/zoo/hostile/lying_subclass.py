"""forward returns an ndarray subclass that lies: every comparison and
difference says 'equal', and its values are wrong (3 out + 1). gradlab judges
an ndarray subclass by its numbers, as a plain array: the lies never run."""
import numpy as np

import gradlab
from _layernorm import LayerNorm


class Liar(np.ndarray):
    def __array_ufunc__(self, ufunc, method, *inputs, **kwargs):
        inputs = [np.asarray(i) for i in inputs]
        out = getattr(ufunc, method)(*inputs, **kwargs)
        return np.zeros_like(out) if ufunc in (np.subtract, np.absolute) else out

    def __eq__(self, other):
        return np.ones(self.shape, bool)


class Lies(LayerNorm):
    def forward(self, x):
        out = super().forward(x)
        return (out * 3 + 1).view(Liar)


@gradlab.register("layernorm")
def build(cfg):
    return Lies(cfg.d_model, cfg.eps)
