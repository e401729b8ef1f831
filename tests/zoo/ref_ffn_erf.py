"""Mildly wrong: GELU with the exact erf, while the contract's FFN uses the tanh approximation."""
import gradlab
from ref_parts import FFN


@gradlab.register("ffn")
def build(cfg):
    return FFN(cfg.d_model, cfg.d_ff, cfg.dtype, exact_gelu=True)
