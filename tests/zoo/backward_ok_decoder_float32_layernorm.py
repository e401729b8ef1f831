"""Correct: the parts' decoder layer (art_parts.py) with LayerNorms that compute in float32 whatever the
input's dtype (cast in, cast back): float32 arithmetic inside, whose rounding reaches every gradient
before it, mixed with float64 ones; judged as float32 (CONTRACT §6)."""
import numpy as np

import gradlab
from art_parts import Decoder, LayerNorm, load_decoder


class LayerNorm32(LayerNorm):
    def forward(self, x):
        self.dtype = x.dtype
        x = x.astype(np.float32)
        mu, var = x.mean(-1, keepdims=True), x.var(-1, keepdims=True)
        self.rstd = 1 / np.sqrt(var + np.float32(self.eps))
        self.xhat = (x - mu) * self.rstd
        return (self.gamma.astype(np.float32) * self.xhat + self.beta.astype(np.float32)).astype(self.dtype)

    def backward(self, g):
        D = g.shape[-1]
        g32 = g.astype(np.float32)
        self.dgamma = (g32 * self.xhat).reshape(-1, D).sum(0).astype(self.gamma.dtype)
        self.dbeta = g32.reshape(-1, D).sum(0).astype(self.beta.dtype)
        d = g32 * self.gamma.astype(np.float32)
        dx = self.rstd * (d - d.mean(-1, keepdims=True) - self.xhat * (d * self.xhat).mean(-1, keepdims=True))
        return dx.astype(self.dtype)


@gradlab.register("decoder_layer", param_map=load_decoder)
def build(cfg):
    layer = Decoder(cfg)
    for ln in (layer.ln1, layer.ln2, layer.ln3):
        ln.__class__ = LayerNorm32
    return layer
