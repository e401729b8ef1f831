"""Article 000 §6.1's WarmupScheduler, copied as is, registered with a two-line factory."""
import gradlab


class WarmupScheduler:
    def __init__(self, d_model, warmup_steps=4000):
        self.d_model = d_model
        self.warmup_steps = warmup_steps
        self.current_step = 0

    def __call__(self):
        self.current_step += 1
        return (self.d_model ** -0.5) * min(
            self.current_step ** -0.5,
            self.current_step * self.warmup_steps ** -1.5
        )


@gradlab.register("warmup")
def build(cfg):
    return WarmupScheduler(cfg.d_model, cfg.warmup_steps)
