"""Correct: the Noam schedule computed in float32, as a float32 training loop stores its lr (the
values are float32 numbers: judged at float32's rounding)."""
import numpy as np

import gradlab

F = np.float32


@gradlab.register("schedule")
def noam(step, d_model, warmup_steps):
    step, warm = F(step), F(warmup_steps)
    return F(d_model) ** F(-0.5) * min(F(1) / np.sqrt(step), step / (warm * np.sqrt(warm)))
