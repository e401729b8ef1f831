"""Broken: Adam increments t inside the loop over parameters."""
import gradlab
import traj_parts as tp

@gradlab.register("adam")
def build(cfg):
    return tp.Adam(cfg, t_in_loop=True)
