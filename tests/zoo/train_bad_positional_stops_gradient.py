"""Broken: backward fills its own gradient but returns a zero dL/dx, as if the
positions were the input's end. Nothing below it learns: in a language model the
token embedding gets no gradient at all (vanishing, in gradlab train's words)."""
import numpy as np

import gradlab
from red_mod_positional_ok import LearnedPositions


class StopsGradient(LearnedPositions):
    def backward(self, grad):
        super().backward(grad)
        return np.zeros_like(grad)


@gradlab.register("positional")
def build(cfg):
    return StopsGradient(cfg.max_len, cfg.d_model, cfg.dtype)
