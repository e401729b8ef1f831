"""Broken twin of style_grads_d_keys.py: the first bias's gradient is the first sample's alone."""
import numpy as np

import gradlab
from style_grads_d_keys import FeedForward


class FirstSampleBias(FeedForward):
    def first_bias_grad(self, dh):
        return dh[0].sum(axis=0)                                          # BUG: the other samples left out


@gradlab.register("ffn")
def build(cfg):
    return FirstSampleBias(cfg.d_model, cfg.d_ff, np.random.default_rng(cfg.seed), cfg.dtype)
