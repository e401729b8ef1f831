"""The step count is a class attribute: every scheduler shares it."""
import gradlab


class Warmup:
    step_num = 0

    def __init__(self, d_model, warmup):
        self.d_model, self.warmup = d_model, warmup

    def __call__(self):
        Warmup.step_num += 1
        s = Warmup.step_num
        return self.d_model ** -0.5 * min(s ** -0.5, s * self.warmup ** -1.5)


@gradlab.register("warmup")
def build(cfg):
    return Warmup(cfg.d_model, cfg.warmup_steps)
