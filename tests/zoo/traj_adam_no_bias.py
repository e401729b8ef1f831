"""Broken: Adam without bias correction."""
import gradlab
import traj_parts as tp

@gradlab.register("adam")
def build(cfg):
    return tp.Adam(cfg, bias_correction=False)
