"""Allocates without end in forward (100 MB arrays, never touched: only the address space fills)."""
import numpy as np

import gradlab
from _layernorm import LayerNorm


class Floods(LayerNorm):
    def forward(self, x):
        hoard = []
        while True:
            hoard.append(np.empty(100 << 20, dtype=np.uint8))


@gradlab.register("layernorm")
def build(cfg):
    return Floods(cfg.d_model, cfg.eps)
