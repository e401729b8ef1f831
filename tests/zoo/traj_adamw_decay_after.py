"""Broken: AdamW decays the weights after the Adam update."""
import gradlab
import traj_parts as tp

@gradlab.register("adamw")
def build(cfg):
    return tp.Adam(cfg, decoupled=True, decay_after=True)
