"""Unusable as written: the per-head weights' gradients are kept in a dict of lists under a name of the
student's own (self.store['dW_q'][h]), where gradlab does not look; only W_o and b_o are found. A param_map
function loads the reference weights, so no name is missing: the parameters' numbers show it."""
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent / "styles"))

import gradlab                                   # noqa: E402
from style_head_lists import HeadLists, load     # noqa: E402


class HiddenGrads(HeadLists):
    def backward(self, g):
        dx = super().backward(g)
        self.store = {}
        for name in ("dW_q", "dW_k", "dW_v", "db_q", "db_k", "db_v"):
            self.store[name] = self.__dict__.pop(name)
        return dx


@gradlab.register("attention", param_map=load)
def build(cfg):
    return HiddenGrads(cfg.d_model, cfg.num_heads, cfg.dtype, cfg.seed)
