"""Broken twin: the GELU derivative is the ReLU's (copied from a ReLU network)."""
import gradlab
from style_float32_param_value import F32, FFN


class ReluDerivative(FFN):
    @staticmethod
    def gelu_grad(h):
        return (h > 0).astype(F32)                     # BUG: the derivative of the tanh-approximated GELU


@gradlab.register("ffn")
def build(cfg):
    return ReluDerivative(cfg.d_model, cfg.d_ff, cfg.seed)
