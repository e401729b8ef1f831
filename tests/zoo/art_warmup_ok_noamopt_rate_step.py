"""NoamOpt with rate(step) taking the step as a required argument: step() keeps the current rate in
self._rate and returns nothing, so the rate is read from _rate (rate() cannot be called bare)."""
import gradlab


class NoamOpt:
    def __init__(self, model_size, factor, warmup):
        self._step, self._rate = 0, 0.0
        self.warmup, self.factor, self.model_size = warmup, factor, model_size

    def step(self):
        self._step += 1
        self._rate = self.rate(self._step)

    def rate(self, step):
        return self.factor * self.model_size ** -0.5 * min(step ** -0.5, step * self.warmup ** -1.5)


@gradlab.register("warmup")
def build(cfg):
    return NoamOpt(cfg.d_model, 1, cfg.warmup_steps)
