"""Article 000's layer_norm in the encoder: (x - mean) / (std + 1e-6), eps outside the square root, with
its own consistent backward; the contract's LayerNorm is (x - mean) / sqrt(var + eps)."""
import numpy as np

import gradlab
from art_parts import Encoder, LayerNorm, load_encoder


class StdEpsLayerNorm(LayerNorm):
    def forward(self, x):
        self.xc = x - x.mean(-1, keepdims=True)
        self.s = np.sqrt((self.xc ** 2).mean(-1, keepdims=True))
        self.r = 1 / (self.s + 1e-6)                                      # BUG: the article's eps placement
        self.xhat = self.xc * self.r
        return self.gamma * self.xhat + self.beta

    def backward(self, g):
        D = g.shape[-1]
        self.dgamma = (g * self.xhat).reshape(-1, D).sum(0)
        self.dbeta = g.reshape(-1, D).sum(0)
        d = g * self.gamma
        dxc = d * self.r - self.r ** 2 * (d * self.xc).sum(-1, keepdims=True) * self.xc / (D * self.s)
        return dxc - dxc.mean(-1, keepdims=True)


@gradlab.register("encoder_layer", param_map=load_encoder)
def build(cfg):
    module = Encoder(cfg)
    for name in ("ln1", "ln2"):
        ln = getattr(module, name)
        ln.__class__ = StdEpsLayerNorm
    return module
