"""The Annotated Transformer's NoamOpt, without the torch optimizer it wraps (nor the rate it stores): step()
advances and returns nothing; rate(step=None) gives the current step's."""
import gradlab


class NoamOpt:
    def __init__(self, model_size, factor, warmup):
        self._step = 0
        self.warmup, self.factor, self.model_size = warmup, factor, model_size

    def step(self):
        self._step += 1

    def rate(self, step=None):
        step = self._step if step is None else step
        return self.factor * self.model_size ** -0.5 * min(step ** -0.5, step * self.warmup ** -1.5)


@gradlab.register("warmup")
def build(cfg):
    return NoamOpt(cfg.d_model, 1, cfg.warmup_steps)
