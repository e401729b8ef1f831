"""Correct: a Pre-LN block built from the student's own LayerNorm (attribute gamma/dgamma), attention (params dict, -1e9 additive mask) and FFN (honours cfg.activation), all in red_mod_parts.py."""
import numpy as np

import gradlab
from red_mod_parts import Block


@gradlab.register("block")
def build(cfg):
    return Block(cfg, np.random.default_rng(cfg.seed))
