"""Broken: LayerNorm statistics over the batch axis (axis 0) instead of the features."""
import gradlab
from ref_parts import LayerNorm


@gradlab.register("layernorm")
def build(cfg):
    return LayerNorm(cfg.d_model, cfg.eps, cfg.dtype, axis=0)
