"""A correct submission: the one checked after each hostile one."""
import gradlab
from _layernorm import LayerNorm


@gradlab.register("layernorm")
def build(cfg):
    return LayerNorm(cfg.d_model, cfg.eps)
