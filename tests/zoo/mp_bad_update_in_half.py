"""Broken: mp_ok_student.py's scaler unscales in float32 right, then computes the update lr * grad in
float16 (the gradient cast back to float16 and a float16 lr): told apart from unscaling in float16 when lr
is not 1."""
import numpy as np

import gradlab
from mp_ok_student import Scaler


class UpdateInHalf(Scaler):
    def step(self, master, half_grads):
        grads = self.unscale(half_grads)
        if self.overflowed(grads):
            self.on_overflow()
            return False
        for k in grads:
            master[k] -= (np.float16(self.lr) * grads[k].astype(np.float16)).astype(np.float32)   # BUG: in float16
        self.on_success()
        return True


@gradlab.register("mixed_precision")
def build(cfg):
    return UpdateInHalf(cfg)
