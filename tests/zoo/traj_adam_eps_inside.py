"""Broken: Adam with eps inside the square root."""
import gradlab
import traj_parts as tp

@gradlab.register("adam")
def build(cfg):
    return tp.Adam(cfg, eps_inside=True)
