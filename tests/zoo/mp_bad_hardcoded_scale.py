"""Broken quietly: loss scaling that starts at 1024 and grows after 4 good steps whatever cfg.loss_scale and
cfg.growth_interval say (their defaults)."""
import numpy as np
import gradlab

class AmpScaler:
    """multiply by the float32 inverse scale; overflow test via a float32 sum of squares? no: isfinite per array"""
    def __init__(self, lr, scale, dynamic, interval):
        self.lr, self.loss_scale, self.dynamic, self.interval = lr, scale, dynamic, interval
        self._good = 0
    def to_half_precision(self, params):
        out = {}
        for k, v in params.items():
            out[k] = v.astype(np.float16) if v.dtype == np.float32 else v
        return out
    def to_full_precision(self, params):
        return {k: (v.astype(np.float32) if v.dtype == np.float16 else v) for k, v in params.items()}
    def step(self, master, half_grads):
        inv = np.float32(1.0) / np.float32(self.loss_scale)
        g32 = {k: half_grads[k].astype(np.float32) * inv for k in half_grads}
        ok = all(np.all(np.isfinite(g)) for g in g32.values())
        if not ok:
            if self.dynamic:
                self.loss_scale /= 2; self._good = 0
            return False
        for k, g in g32.items():
            master[k] -= np.float32(self.lr) * g
        if self.dynamic:
            self._good += 1
            if self._good >= self.interval:
                self.loss_scale *= 2; self._good = 0
        return True

@gradlab.register("mixed_precision")
def build(cfg):
    return AmpScaler(cfg.lr, 1024.0, cfg.loss_scaling == "dynamic", 4)     # BUG: cfg.loss_scale, cfg.growth_interval
