"""Broken: dynamic scaling whose count of good steps is not started again when the scale grows, so once it
has grown it doubles again on every later good step."""
import gradlab
from mp_ok_student import Scaler


class CountsOn(Scaler):
    def on_success(self):
        if self.dynamic:
            self.since_overflow += 1
            if self.since_overflow >= self.interval:
                self.loss_scale = self.loss_scale * 2                   # BUG: since_overflow is not reset here


@gradlab.register("mixed_precision")
def build(cfg):
    return CountsOn(cfg)
