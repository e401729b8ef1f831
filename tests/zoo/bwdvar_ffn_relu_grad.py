"""Broken: forward computes GELU (tanh approximation), backward multiplies by the
ReLU derivative (h > 0), copied from a ReLU FFN."""
import gradlab
from bwdvar_ffn_parts import MLP


class ReluGrad(MLP):
    def dgelu(self):
        return (self.h > 0).astype(self.h.dtype)    # BUG: the ReLU derivative


@gradlab.register("ffn")
def build(cfg):
    return ReluGrad(cfg.d_model, cfg.d_ff, cfg.dtype)
