"""Broken at a large mean in float32: the parts' LayerNorm (bwdvar_block_parts.py) with its variance as
mean(x**2) - mean(x)**2 (cancellation; negative, NaN under the sqrt); right in float64 and at ordinary inputs."""
import numpy as np

import gradlab
from bwdvar_block_parts import LayerNorm


class NaiveVariance(LayerNorm):
    def forward(self, x):
        mu = x.mean(-1, keepdims=True)
        var = (x * x).mean(-1, keepdims=True) - mu * mu             # BUG: ((x - mu) ** 2).mean(...)
        self.rstd = 1 / np.sqrt(var + self.eps)
        self.xhat = (x - mu) * self.rstd
        return self.params["gamma"] * self.xhat + self.params["beta"]


@gradlab.register("layernorm")
def build(cfg):
    return NaiveVariance(cfg.d_model, cfg.eps, cfg.dtype)
