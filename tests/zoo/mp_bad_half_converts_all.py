"""Broken: to_half_precision casts every array, integer token ids included."""
import numpy as np

import gradlab
from mp_ok_student import Scaler


class ConvertsAll(Scaler):
    to_half_precision = staticmethod(lambda params: {k: v.astype(np.float16) for k, v in params.items()})


@gradlab.register("mixed_precision")
def build(cfg):
    return ConvertsAll(cfg)
