"""Broken twin: the input gradient forgets the term that comes through the mean."""
import gradlab
from style_ndarray_subclass import LayerNorm


class NoMeanTerm(LayerNorm):
    def input_grad(self, dxhat):
        return self.rstd * (dxhat - self.xhat * (dxhat * self.xhat).mean(axis=-1, keepdims=True))   # BUG


@gradlab.register("layernorm")
def build(cfg):
    return NoMeanTerm(cfg.d_model, cfg.eps, cfg.dtype)
