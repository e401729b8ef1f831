"""Broken: backward returns the gradient with the wrong sign (dlogits negated
at the top), so every update climbs the loss: training fails, the gradient
check names every tensor."""
import gradlab
from red_mod_lm_ok_tied import TinyLM


class Ascending(TinyLM):
    def backward(self, dlogits):
        return super().backward(-dlogits)


@gradlab.register("lm")
def build(cfg):
    return Ascending(cfg)
