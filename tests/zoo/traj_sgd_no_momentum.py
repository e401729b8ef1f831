"""Broken: SGD ignoring momentum."""
import gradlab
import traj_parts as tp

@gradlab.register("sgd")
def build(cfg):
    return tp.SGD(cfg, no_momentum=True)
