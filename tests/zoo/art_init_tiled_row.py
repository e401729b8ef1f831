"""Broken: one row drawn and tiled over fan_in rows (every row of the weight the same)."""
import numpy as np

import gradlab
from art_init_ok import SCHEMES


@gradlab.register("init")
def init(shape, scheme, rng):
    row = SCHEMES[scheme](shape, rng)[:1]
    return np.tile(row, (shape[0], 1))                                # BUG: rows are copies
