"""Broken twin of style_torch_module_internals.py: the biases' gradient is the mean over the tokens (a
PyTorch reduction='mean' habit), not the sum."""
import numpy as np

import gradlab
from style_torch_module_internals import FeedForward, Linear, load


class MeanBiasLinear(Linear):
    def bias_grad(self, dy):
        return dy.reshape(-1, dy.shape[-1]).mean(axis=0)                 # BUG: mean where a sum belongs


@gradlab.register("ffn", param_map=load)
def build(cfg):
    return FeedForward(cfg.d_model, cfg.d_ff, np.random.default_rng(cfg.seed), cfg.dtype, linear=MeanBiasLinear)
