"""Broken: mp_ok_student.py's scaler unscales in float32 right, then computes the update lr * grad in
float16 (the gradient cast back to float16 and a float16 lr): told apart from unscaling in float16 when lr
is not 1."""
import numpy as np

import gradlab
from mp_ok_student import Scaler


class UpdateInHalf(Scaler):
    def update(self, master, k, grad):
        master[k] -= (np.float16(self.lr) * grad.astype(np.float16)).astype(np.float32)   # BUG: in float16


@gradlab.register("mixed_precision")
def build(cfg):
    return UpdateInHalf(cfg)
