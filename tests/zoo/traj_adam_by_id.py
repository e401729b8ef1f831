"""Correct: an Adam whose state is one dict per parameter, keyed by id(p) (not by
name), with the step size folded PyTorch-style: lr * sqrt(1 - b2^t) / (1 - b1^t), and
torch.optim.Adam's (coupled) weight decay."""
import numpy as np

import gradlab


class Adam:
    def __init__(self, lr, betas, eps, weight_decay=0.0):
        self.lr, (self.b1, self.b2), self.eps, self.wd = lr, betas, eps, weight_decay
        self.state = {}
        self.steps = 0

    def step(self, params, grads):
        self.steps += 1
        for name, p in params.items():
            st = self.state.setdefault(id(p), {"exp_avg": np.zeros_like(p), "exp_avg_sq": np.zeros_like(p)})
            g = grads[name] + self.wd * p if self.wd else grads[name]
            st["exp_avg"] *= self.b1
            st["exp_avg"] += (1 - self.b1) * g
            st["exp_avg_sq"] *= self.b2
            st["exp_avg_sq"] += (1 - self.b2) * g * g
            bc1, bc2 = 1 - self.b1 ** self.steps, 1 - self.b2 ** self.steps
            denom = np.sqrt(st["exp_avg_sq"]) / np.sqrt(bc2) + self.eps
            p -= (self.lr / bc1) * st["exp_avg"] / denom


@gradlab.register("adam")
def build(cfg):
    return Adam(cfg.lr, (cfg.beta1, cfg.beta2), cfg.eps, cfg.weight_decay)
