"""Broken: the CS231n-style encoder layer of bwdvar_encoder_parts.py with a LayerNorm backward that
leaves out the variance term (- xhat * mean(dxhat * xhat)), used for both LayerNorms."""
import numpy as np

import gradlab
from bwdvar_encoder_parts import Encoder


def ln_bwd_no_variance(dout, cache):
    xh, s, g = cache
    D = xh.shape[-1]
    dxh = dout * g
    dx = (dxh - dxh.mean(-1, keepdims=True)) / s                   # BUG: the variance term is missing
    return dx, (dout * xh).reshape(-1, D).sum(0), dout.reshape(-1, D).sum(0)


class NoVarianceEncoder(Encoder):
    ln_bwd = staticmethod(ln_bwd_no_variance)


@gradlab.register("encoder_layer")
def build(cfg):
    return NoVarianceEncoder(cfg)
