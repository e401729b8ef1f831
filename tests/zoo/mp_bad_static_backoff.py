"""Broken: halves the scale on overflow in static mode too."""
import gradlab
from mp_ok_student import Scaler


class AlwaysBackoff(Scaler):
    def on_overflow(self):
        self.loss_scale = self.loss_scale / 2
        self.since_overflow = 0


@gradlab.register("mixed_precision")
def build(cfg):
    return AlwaysBackoff(cfg)
