"""Correct: a student's LM, parameters in dicts and nested blocks (names as the reference's)."""
import gradlab
from overfit_lm_parts import LM


@gradlab.register("lm")
def build(cfg):
    return LM(cfg)
