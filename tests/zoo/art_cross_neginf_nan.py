"""-inf for padded keys and a plain softmax: a sample padded entirely gives 0/0 = NaN."""
import numpy as np

import gradlab
from art_parts import CrossAttention, load_cross


class NegInf(CrossAttention):
    def mask(self, scores, pad):
        return scores if pad is None else np.where(pad[:, None, None, :], -np.inf, scores)


@gradlab.register("cross_attention", param_map=load_cross)
def build(cfg):
    return NegInf(cfg)
