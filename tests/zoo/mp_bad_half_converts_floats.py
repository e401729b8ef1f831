"""Broken: to_half_precision casts every float array (a float kind test), float64 ones included."""
import numpy as np

import gradlab
from mp_ok_student import Scaler


class ConvertsFloats(Scaler):
    to_half_precision = staticmethod(lambda params: {k: v.astype(np.float16) if v.dtype.kind == "f" else v
                                                     for k, v in params.items()})


@gradlab.register("mixed_precision")
def build(cfg):
    return ConvertsFloats(cfg)
