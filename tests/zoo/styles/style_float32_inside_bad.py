"""Broken twin: the weight gradients are averaged over the B*T tokens instead of summed."""
import numpy as np

import gradlab
from style_float32_inside import FFN


class MeanOverTokens(FFN):
    @staticmethod
    def token_sum(inputs, grads):
        return np.einsum("bti,btj->ij", inputs, grads) / np.float32(grads.shape[0] * grads.shape[1])   # BUG: a sum


@gradlab.register("ffn")
def build(cfg):
    return MeanOverTokens(cfg.d_model, cfg.d_ff, cfg.np_dtype, np.random.default_rng(cfg.seed))
