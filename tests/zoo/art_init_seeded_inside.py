"""Broken: a generator seeded inside every call (rng ignored): two layers of a shape get the same weights."""
import numpy as np

import gradlab
from art_init_ok import SCHEMES


@gradlab.register("init")
def init(shape, scheme, rng):
    return SCHEMES[scheme](shape, np.random.default_rng(42))           # BUG: the same draw every call
