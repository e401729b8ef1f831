"""Broken quietly: the parts' causal attention (bwdvar_block_parts.py) built with two heads whatever
cfg.num_heads says. At the default num_heads of 2 it is exact; the reference check moves num_heads."""
import numpy as np

import gradlab
from bwdvar_block_parts import SelfAttention


@gradlab.register("attention")
def build(cfg):
    return SelfAttention(cfg.d_model, 2, np.random.default_rng(cfg.seed), cfg.dtype)   # BUG: cfg.num_heads
