"""Broken (one bug): warmup term step * warmup_steps**-1.0 (a plain linear ramp
to 1) instead of step * warmup_steps**-1.5."""
import numpy as np

import gradlab


@gradlab.register("schedule")
def noam(step, d_model, warmup_steps):
    return (1 / np.sqrt(d_model)) * min(1 / np.sqrt(step), step / warmup_steps)   # BUG: ** -1.0
