"""Mixed precision training, the articles' §7.2 with loss scaling: float32
master weights, float16 compute, and a loss scale that keeps small gradients
from underflowing in float16.

One training step with it:

    mp = build(cfg)
    half = mp.to_half_precision(master)            # float32 master weights -> float16 copies
    ...forward and backward of the float16 model, with grad_logits * mp.loss_scale...
    applied = mp.step(master, half_grads)          # unscale in float32; skip on inf/NaN
"""
import numpy as np

import gradlab


class MixedPrecision:
    """Loss scaling as torch.cuda.amp.GradScaler does it. static: the scale never
    changes. dynamic: an overflow (inf or NaN in the gradients) halves it and
    skips the step; growth_interval good steps in a row double it."""

    def __init__(self, lr, loss_scale=1024.0, dynamic=True, growth_interval=4, backoff=0.5, growth=2.0):
        self.lr = lr
        self.loss_scale = float(loss_scale)
        self.dynamic, self.growth_interval = dynamic, growth_interval
        self.backoff, self.growth = backoff, growth
        self.good_steps = 0                       # good steps since the last overflow or growth

    @staticmethod
    def to_half_precision(params):                # the article's: float32 -> float16 copies, others as they are
        return {k: v.astype(np.float16) if v.dtype == np.float32 else v for k, v in params.items()}

    @staticmethod
    def to_full_precision(params):                # the article's: float16 -> float32
        return {k: v.astype(np.float32) if v.dtype == np.float16 else v for k, v in params.items()}

    def step(self, master, half_grads):
        """master: name -> float32 array (updated in place); half_grads: name -> float16
        gradient of loss * loss_scale. Returns True if the weights were updated."""
        # unscale in float32: a float16 gradient of 1e-3 divided by 1024 in float16 is 1e-6, near float16's floor
        grads = {k: g.astype(np.float32) / np.float32(self.loss_scale) for k, g in half_grads.items()}
        if not all(np.isfinite(g).all() for g in grads.values()):
            if self.dynamic:                      # the scale was too large: halve it, skip this step
                self.loss_scale *= self.backoff
                self.good_steps = 0
            return False
        for name, p in master.items():
            if name in grads:
                p -= (self.lr * grads[name]).astype(p.dtype)   # plain SGD on the master weights, in place
        if self.dynamic:
            self.good_steps += 1
            if self.good_steps == self.growth_interval:        # no overflow for a while: try a larger scale
                self.loss_scale *= self.growth
                self.good_steps = 0
        return True


@gradlab.register("mixed_precision")
def build(cfg):
    return MixedPrecision(cfg.lr, loss_scale=cfg.loss_scale, dynamic=cfg.loss_scaling == "dynamic",
                          growth_interval=cfg.growth_interval)
