"""lr multiplies the float16 gradients (still scaled) in float16, before they are unscaled in float32."""
import numpy as np

import gradlab
from mp_ok_student import Scaler


class LrInHalf(Scaler):
    def step(self, master, half_grads):
        grads = self.unscale(half_grads)
        if self.overflowed(grads):
            self.on_overflow()
            return False
        for k, g in half_grads.items():
            master[k] -= (np.float16(self.lr) * g).astype(np.float32) / np.float32(self.loss_scale)
        self.on_success()
        return True


@gradlab.register("mixed_precision")
def build(cfg):
    return LrInHalf(cfg)
