"""Correct warmup schedule, written with numpy and an if."""
import numpy as np

import gradlab


@gradlab.register("schedule")
def schedule(step, d_model, warmup_steps):
    if step < warmup_steps:
        return float(np.power(d_model, -0.5) * step * np.power(warmup_steps, -1.5))
    return float(np.power(d_model, -0.5) / np.sqrt(step))
