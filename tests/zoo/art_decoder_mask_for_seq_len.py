"""The self-attention's causal mask is built once for cfg.seq_len and added as it is: any other length fails to
broadcast (a shorter batch, a longer sequence up to max_len)."""
import numpy as np

import gradlab
from art_parts import Attention, Decoder, load_decoder


class FixedMask(Attention):
    def __init__(self, d, heads, rng, seq_len):
        super().__init__(d, heads, rng, causal=True)
        self.fixed = np.triu(np.ones((seq_len, seq_len), bool), k=1)

    def mask(self, scores, pad):
        return scores - 1e9 * self.fixed


class FixedMaskDecoder(Decoder):
    def __init__(self, cfg):
        super().__init__(cfg)
        self.self_attn = FixedMask(cfg.d_model, cfg.num_heads, np.random.default_rng(cfg.seed), cfg.seq_len)


@gradlab.register("decoder_layer", param_map=load_decoder)
def build(cfg):
    return FixedMaskDecoder(cfg)
