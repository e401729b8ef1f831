"""Correct: the tiny lm of repeated_ids_ok_tiny_lm.py with its tables always float32, whatever cfg.dtype
says (CONTRACT §6): in a float64 run it computes in float32, so finite differences of it need float32's
step (a step of 1e-6 is lost in float32's rounding)."""
import gradlab
from repeated_ids_ok_tiny_lm import TinyLM


@gradlab.register("lm")
def build(cfg):
    return TinyLM(cfg.vocab_size, cfg.d_model, cfg.max_len, "float32")
