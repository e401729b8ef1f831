"""Correct: the schedule written as a class with __call__ (a callable object
registered in place of a function), using numpy."""
import numpy as np

import gradlab


class NoamSchedule:
    def __call__(self, step, d_model, warmup_steps):
        step = np.float64(step)
        arg1 = 1.0 / np.sqrt(step)
        arg2 = step * warmup_steps ** (-1.5)
        return np.minimum(arg1, arg2) / np.sqrt(d_model)


gradlab.register("schedule")(NoamSchedule())
