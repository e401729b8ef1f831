"""Broken: dynamic scaling that only ever shrinks: the scale never grows back."""
import gradlab
from mp_ok_student import Scaler


class NeverGrows(Scaler):
    def on_success(self):
        pass


@gradlab.register("mixed_precision")
def build(cfg):
    return NeverGrows(cfg)
