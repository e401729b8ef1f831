"""Broken: the tiny lm adds the mean over the whole sequence to every position,
so each position sees the future (forward and backward are consistent)."""
import gradlab
from repeated_ids_ok_tiny_lm import TinyLM


class MeanOverTime(TinyLM):
    def mix(self, x):
        return x + x.mean(axis=1, keepdims=True)

    def unmix(self, g):
        return g + g.mean(axis=1, keepdims=True)


@gradlab.register("lm")
def build(cfg):
    return MeanOverTime(cfg.vocab_size, cfg.d_model, cfg.max_len, cfg.dtype)
