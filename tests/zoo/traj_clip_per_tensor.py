"""Broken: each array clipped by its own norm."""
import gradlab
import traj_parts as tp

@gradlab.register("clip_grad_norm")
def clip(grads, max_norm):
    return tp.clip_grad_norm(grads, max_norm, per_tensor=True)
