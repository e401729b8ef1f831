"""Broken (one bug): the float32 schedule with warmup_steps**-0.5 in the warmup term."""
import numpy as np

import gradlab

F = np.float32


@gradlab.register("schedule")
def noam(step, d_model, warmup_steps):
    step, warm = F(step), F(warmup_steps)
    return F(d_model) ** F(-0.5) * min(F(1) / np.sqrt(step), step / np.sqrt(warm))   # BUG: warm**1.5
