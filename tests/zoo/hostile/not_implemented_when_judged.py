"""A wrong backward (dgamma 3x) that raises NotImplementedError only while gradlab's gradient check is on
the stack (gradlab's own check code runs in the worker too: the rehearsal), so that the check would take
it for a forward-only module and skip."""
import sys

import gradlab
from _layernorm import LayerNorm


def _judged():
    frame = sys._getframe()
    while frame is not None:
        if frame.f_code.co_filename.replace("\\", "/").endswith("checks/gradient.py"):
            return True
        frame = frame.f_back
    return False


class Dodges(LayerNorm):
    def backward(self, g):
        if _judged():
            raise NotImplementedError
        dx = super().backward(g)
        self.grads["gamma"] = self.grads["gamma"] * 3
        return dx


@gradlab.register("layernorm")
def build(cfg):
    return Dodges(cfg.d_model, cfg.eps)
