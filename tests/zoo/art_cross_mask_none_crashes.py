"""key_padding_mask=None (CONTRACT §3: no padding) is indexed as if it were an array: forward raises, which
only showed when a seq2seq's decoder was called without a mask."""
import numpy as np

import gradlab
from art_parts import CrossAttention, load_cross


class NoneCrashes(CrossAttention):
    def mask(self, scores, pad):
        T, S = scores.shape[-2:]
        return scores - 1e9 * np.asarray(pad)[:, None, None, :]            # BUG: no `if pad is not None`


@gradlab.register("cross_attention", param_map=load_cross)
def build(cfg):
    return NoneCrashes(cfg)
