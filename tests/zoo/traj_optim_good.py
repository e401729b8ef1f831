"""Correct Adam, AdamW, SGD and clipping from the same student code."""
import gradlab
import traj_parts as tp

@gradlab.register("adam")
def build_adam(cfg):
    return tp.Adam(cfg)


@gradlab.register("adamw")
def build_adamw(cfg):
    return tp.Adam(cfg, decoupled=True)


@gradlab.register("sgd")
def build_sgd(cfg):
    return tp.SGD(cfg)


gradlab.register("clip_grad_norm")(tp.clip_grad_norm)
