"""Broken twin: the variance is the unbiased one (divides by D - 1)."""
import gradlab
from style_grads_by_name import LayerNorm
import numpy as np


class Unbiased(LayerNorm):
    @staticmethod
    def variance(inputs, mean):
        return ((inputs - mean) ** 2).sum(axis=-1, keepdims=True) / (inputs.shape[-1] - 1)   # BUG: ddof=1


@gradlab.register("layernorm", param_map={"weight": "gamma", "bias": "beta"})
def build(cfg):
    return Unbiased(cfg.d_model, cfg.eps, np.random.default_rng(cfg.seed))
