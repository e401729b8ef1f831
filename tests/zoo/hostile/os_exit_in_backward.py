"""os._exit(0) in backward: in gradlab's own process this ended gradlab with status 0 (a pass, to a script)."""
import os

import gradlab
from _layernorm import LayerNorm


class Exits(LayerNorm):
    def backward(self, g):
        os._exit(0)


@gradlab.register("layernorm")
def build(cfg):
    return Exits(cfg.d_model, cfg.eps)
