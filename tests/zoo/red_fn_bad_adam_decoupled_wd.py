"""Broken only when weight_decay > 0: torch.optim.Adam couples the decay into
the gradient; this Adam decays the weights directly (AdamW style). With the
adam kind's default weight_decay=0 it is identical to the reference."""
import numpy as np

import gradlab


class Adam:
    def __init__(self, cfg):
        self.cfg, self.t, self.m, self.v = cfg, 0, {}, {}

    def step(self, params, grads):
        c = self.cfg
        self.t += 1
        for k, p in params.items():
            g = grads[k]
            p *= 1 - c.lr * c.weight_decay                           # BUG (if wd > 0): decoupled
            self.m[k] = c.beta1 * self.m.get(k, 0) + (1 - c.beta1) * g
            self.v[k] = c.beta2 * self.v.get(k, 0) + (1 - c.beta2) * g * g
            p -= c.lr * (self.m[k] / (1 - c.beta1 ** self.t)) / (np.sqrt(self.v[k] / (1 - c.beta2 ** self.t)) + c.eps)


gradlab.register("adam")(Adam)
