"""Broken, quietly: the LM of red_mod_lm_ok_tied.py with every attention's
out_weight gradient transposed (square, so the shape is right). It still
trains: `gradlab train` and the train check cannot tell it (README), the
gradient check names it."""
import gradlab
from red_mod_lm_ok_tied import TinyLM
from red_mod_parts import Attention


class TransposedOutGrad(Attention):
    def backward(self, g):
        dx = super().backward(g)
        self.grads["out_weight"] = self.grads["out_weight"].T.copy()
        return dx


class LM(TinyLM):
    def __init__(self, cfg):
        super().__init__(cfg)
        for blk in self.blocks:
            blk.attn.__class__ = TransposedOutGrad


@gradlab.register("lm")
def build(cfg):
    return LM(cfg)
