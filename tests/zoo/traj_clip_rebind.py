"""Broken: clipping makes new arrays (g = g * scale) instead of scaling in place."""
import gradlab
import traj_parts as tp

@gradlab.register("clip_grad_norm")
def clip(grads, max_norm):
    return tp.clip_grad_norm(grads, max_norm, rebind=True)
