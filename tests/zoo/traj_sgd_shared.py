"""Broken: one momentum buffer shared by every parameter."""
import gradlab
import traj_parts as tp

@gradlab.register("sgd")
def build(cfg):
    return tp.SGD(cfg, shared_buffer=True)
