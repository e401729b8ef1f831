"""Broken: unscaled in float32 right, then the update lr * grad computed in float16 (the gradient cast back
to float16 and a float16 lr): told apart from unscaling in float16 when lr is not 1."""
import numpy as np
import gradlab


class MP:
    def __init__(self, cfg):
        self.lr = cfg.lr
        self.loss_scale = float(cfg.loss_scale)
        self.dynamic = cfg.loss_scaling == "dynamic"
        self.interval = cfg.growth_interval
        self.streak = 0

    def to_half_precision(self, params):
        out = {}
        for k, v in params.items():
            out[k] = v.astype(np.float16) if v.dtype == np.float32 else v
        return out

    def to_full_precision(self, params):
        out = {}
        for k, v in params.items():
            out[k] = v.astype(np.float32) if v.dtype == np.float16 else v
        return out

    def step(self, master, half_grads):
        inv = np.float32(1.0 / self.loss_scale)
        g32 = {k: g.astype(np.float32) * inv for k, g in half_grads.items()}
        bad = any(not np.all(np.isfinite(g)) for g in g32.values())
        if bad:
            if self.dynamic:
                self.loss_scale /= 2
                self.streak = 0
            return False
        for k, g in g32.items():
            master[k] -= (np.float16(self.lr) * g.astype(np.float16)).astype(np.float32)   # BUG: in float16
        if self.dynamic:
            self.streak += 1
            if self.streak >= self.interval:
                self.loss_scale *= 2
                self.streak = 0
        return True


@gradlab.register("mixed_precision")
def build(cfg):
    return MP(cfg)
