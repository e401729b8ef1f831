"""PyTorch's style: step() advances, get_last_lr() reads; also registers the function form."""
import gradlab


def noam(step, d_model, warmup_steps):
    return d_model ** -0.5 * min(step ** -0.5, step * warmup_steps ** -1.5)


class NoamScheduler:
    def __init__(self, d_model, warmup_steps):
        self.d_model, self.warmup_steps = d_model, warmup_steps
        self.last_epoch = 0
        self._last_lr = [0.0]

    def step(self):
        self.last_epoch += 1
        self._last_lr = [noam(self.last_epoch, self.d_model, self.warmup_steps)]

    def get_last_lr(self):
        return self._last_lr


gradlab.register("schedule")(noam)


@gradlab.register("warmup")
def build(cfg):
    return NoamScheduler(cfg.d_model, cfg.warmup_steps)
