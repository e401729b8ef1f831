"""Correct, with the generator keyword-only (`def init(shape, scheme, *, rng)`), given by name."""
import gradlab
from art_init_ok import SCHEMES


@gradlab.register("init")
def init(shape, scheme, *, rng):
    return SCHEMES[scheme](shape, rng)
