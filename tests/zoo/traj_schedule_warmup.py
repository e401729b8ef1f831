"""Broken: the warmup term uses warmup_steps ** -0.5."""
import gradlab


@gradlab.register("schedule")
def schedule(step, d_model, warmup_steps):
    return d_model ** -0.5 * min(step ** -0.5, step * warmup_steps ** -0.5)
