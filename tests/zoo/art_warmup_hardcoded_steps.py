"""Broken quietly: a PyTorch-like Noam scheduler built with warmup 4 whatever cfg.warmup_steps says (the
default is 4)."""
import gradlab

class NoamLR:
    """PyTorch-like: step() returns None, get_last_lr() -> [lr]; last_epoch counter from -1; factor"""
    def __init__(self, d_model, warmup, factor=1.0):
        self.d_model, self.warmup, self.factor = d_model, warmup, factor
        self.last_epoch = 0
        self._last_lr = [0.0]
    def get_lr(self):
        s = max(self.last_epoch, 1)
        return [self.factor * self.d_model ** -0.5 * min(s ** -0.5, s * self.warmup ** -1.5)]
    def step(self):
        self.last_epoch += 1
        self._last_lr = self.get_lr()
    def get_last_lr(self):
        return self._last_lr

@gradlab.register("warmup")
def build(cfg):
    return NoamLR(cfg.d_model, 4)                              # BUG: cfg.warmup_steps
