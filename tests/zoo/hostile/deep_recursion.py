"""Raises the recursion limit and recurses without end in forward (the C stack overflows)."""
import sys

import gradlab
from _layernorm import LayerNorm


def down(n):
    return down(n + 1) + 1


class Recurses(LayerNorm):
    def forward(self, x):
        sys.setrecursionlimit(10 ** 8)
        return down(0)


@gradlab.register("layernorm")
def build(cfg):
    return Recurses(cfg.d_model, cfg.eps)
