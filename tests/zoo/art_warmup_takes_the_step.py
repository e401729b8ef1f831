"""Not this kind: TensorFlow's CustomSchedule in NumPy, whose __call__ takes the step: a function of the
step is the schedule kind; the warmup kind's scheduler counts its own steps (article 000)."""
import numpy as np

import gradlab


class CustomSchedule:
    def __init__(self, d_model, warmup_steps):
        self.d_model, self.warmup_steps = d_model, warmup_steps

    def __call__(self, step):
        return self.d_model ** -0.5 * np.minimum(step ** -0.5, step * self.warmup_steps ** -1.5)


@gradlab.register("warmup")
def build(cfg):
    return CustomSchedule(cfg.d_model, cfg.warmup_steps)
