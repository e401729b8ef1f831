"""Broken twin: the float mask buffer is built with k=2, so each position also sees the next one."""
import numpy as np

import gradlab
from style_forward_only_float_mask import Attention


class MaskOffByOne(Attention):
    def __init__(self, cfg):
        super().__init__(cfg)
        L = cfg.max_len
        self.mask = (np.triu(np.ones((L, L)), k=2) * -1e9).astype(cfg.dtype)      # BUG: k=1


@gradlab.register("attention")
def build(cfg):
    return MaskOffByOne(cfg)
