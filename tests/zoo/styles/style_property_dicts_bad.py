"""Broken twin: the input gradient forgets the path through the mean."""
import gradlab
from style_property_dicts import LayerNorm


class NoMeanTerm(LayerNorm):
    def _dx(self, dxhat, xhat, inv_std):
        return inv_std * (dxhat - xhat * (dxhat * xhat).mean(-1, keepdims=True))    # BUG: - dxhat.mean(-1)


@gradlab.register("layernorm")
def build(cfg):
    return NoMeanTerm(cfg.d_model, cfg.eps, cfg.dtype)
