"""Broken: AdamW with the decay coupled into the gradient (Adam + L2)."""
import gradlab
import traj_parts as tp

@gradlab.register("adamw")
def build(cfg):
    return tp.Adam(cfg, decoupled=True, coupled=True)
