"""The warmup ("Noam") schedule as article 000's stateful object: each call advances one step."""
import gradlab

from .functional import schedule


class WarmupScheduler:
    """scheduler() -> the learning rate of the next step: steps 1, 2, 3, ... of
    d_model**-0.5 * min(step**-0.5, step * warmup_steps**-1.5) (the `schedule` kind's curve)."""

    def __init__(self, d_model, warmup_steps=4000):
        self.d_model, self.warmup_steps = d_model, warmup_steps
        self.current_step = 0                   # per instance: two schedulers never share a count

    def __call__(self):
        self.current_step += 1
        return schedule(self.current_step, self.d_model, self.warmup_steps)


@gradlab.register("warmup")
def build(cfg):
    return WarmupScheduler(cfg.d_model, cfg.warmup_steps)
