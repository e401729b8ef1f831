"""Correct: the names of ref_layernorm_renamed.py, with a param_map dict."""
import gradlab
from ref_parts import RenamedLayerNorm


@gradlab.register("layernorm", param_map={"weight": "gamma", "bias": "beta"})
def build(cfg):
    return RenamedLayerNorm(cfg.d_model, cfg.eps, cfg.dtype)
