"""current_step starts at 1 and is incremented before use: the first call is step 2."""
import gradlab


class Warmup:
    def __init__(self, d_model, warmup_steps):
        self.d_model, self.warmup_steps, self.current_step = d_model, warmup_steps, 1

    def __call__(self):
        self.current_step += 1
        s = self.current_step
        return self.d_model ** -0.5 * min(s ** -0.5, s * self.warmup_steps ** -1.5)


@gradlab.register("warmup")
def build(cfg):
    return Warmup(cfg.d_model, cfg.warmup_steps)
