"""Broken: the warmup schedule counts steps from 0 (uses step + 1)."""
import gradlab


@gradlab.register("schedule")
def schedule(step, d_model, warmup_steps):
    step = step + 1
    return d_model ** -0.5 * min(step ** -0.5, step * warmup_steps ** -1.5)
