"""Broken: the loss scale is kept as an int and halved with //: a scale that is no whole number is cut to one
(and a scale of 1 halves to 0)."""
import gradlab
from mp_ok_student import Scaler


class IntScale(Scaler):
    def __init__(self, cfg):
        super().__init__(cfg)
        self.loss_scale = int(cfg.loss_scale)                          # BUG: a float scale is cut

    def on_overflow(self):
        if self.dynamic:
            self.loss_scale //= 2
            self.since_overflow = 0


@gradlab.register("mixed_precision")
def build(cfg):
    return IntScale(cfg)
