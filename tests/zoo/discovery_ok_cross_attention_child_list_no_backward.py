"""Correct: discovery_ok_cross_attention_child_list.py with a child of projections that has no backward
of its own (nor a forward): only __call__ and its list of four Linear objects; the parent runs their
backward itself."""
import gradlab
from discovery_ok_cross_attention_child_list import CrossAttention, Projections, load


@gradlab.register("cross_attention", param_map=load)
def build(cfg):
    return CrossAttention(cfg, Projections)
