"""Broken: the parts' decoder layer, its LayerNorm backward without the mean term (- mean(d))."""
import gradlab
from art_parts import Decoder, LayerNorm, load_decoder


class NoMeanLayerNorm(LayerNorm):
    def backward(self, g):
        D = g.shape[-1]
        self.dgamma = (g * self.xhat).reshape(-1, D).sum(0)
        self.dbeta = g.reshape(-1, D).sum(0)
        d = g * self.gamma
        return self.rstd * (d - self.xhat * (d * self.xhat).mean(-1, keepdims=True))   # BUG: - mean(d) missing


@gradlab.register("decoder_layer", param_map=load_decoder)
def build(cfg):
    layer = Decoder(cfg)
    for ln in (layer.ln1, layer.ln2, layer.ln3):
        ln.__class__ = NoMeanLayerNorm
    return layer
