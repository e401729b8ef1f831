"""Broken twin: the key weights' gradient is built from dq (a copy-paste slip)."""
import gradlab
from style_head_lists import HeadLists, load


class KeyFromQuery(HeadLists):
    @staticmethod
    def head_grads(dq, dk, dv):
        return dq, dq, dv                                              # BUG: dk


@gradlab.register("attention", param_map=load)
def build(cfg):
    return KeyFromQuery(cfg.d_model, cfg.num_heads, cfg.dtype, cfg.seed)
