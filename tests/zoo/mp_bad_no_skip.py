"""Broken: never checks for inf/NaN, so an overflow of the scaled backward
writes inf into the master weights."""
import gradlab
from mp_ok_student import Scaler


class NoSkip(Scaler):
    def overflowed(self, grads):
        return False


@gradlab.register("mixed_precision")
def build(cfg):
    return NoSkip(cfg)
