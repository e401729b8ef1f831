"""Two kinds: a correct softmax, and a layernorm whose forward never returns."""
import numpy as np

import gradlab
from _layernorm import LayerNorm


class Loops(LayerNorm):
    def forward(self, x):
        while True: pass  # noqa: E701  (one line: "last seen at" names it whichever instant the limit falls)


@gradlab.register("layernorm")
def build(cfg):
    return Loops(cfg.d_model, cfg.eps)


@gradlab.register("softmax")
def softmax(x, axis=-1):
    print("softmax of", x.shape)
    e = np.exp(x - x.max(axis=axis, keepdims=True))
    return e / e.sum(axis=axis, keepdims=True)
