"""Broken: clipping returns the norm after clipping."""
import gradlab
import traj_parts as tp

@gradlab.register("clip_grad_norm")
def clip(grads, max_norm):
    return tp.clip_grad_norm(grads, max_norm, return_after=True)
