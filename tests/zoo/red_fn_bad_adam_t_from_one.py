"""Broken (one bug): CS231n-style Adam whose config starts t at 1 and increments it before the update, so
the first step is bias-corrected as the second (1 - beta**2), and every later one as the next."""
import numpy as np

import gradlab


class Adam:
    def __init__(self, cfg):
        self.cfg = cfg
        self.configs = {}

    def step(self, params, grads):
        for name, w in params.items():
            c = self.configs.setdefault(name, {"m": np.zeros_like(w), "v": np.zeros_like(w), "t": 1})  # BUG: 0
            c["t"] += 1
            c["m"] = self.cfg.beta1 * c["m"] + (1 - self.cfg.beta1) * grads[name]
            c["v"] = self.cfg.beta2 * c["v"] + (1 - self.cfg.beta2) * grads[name] ** 2
            m_hat = c["m"] / (1 - self.cfg.beta1 ** c["t"])
            v_hat = c["v"] / (1 - self.cfg.beta2 ** c["t"])
            w -= self.cfg.lr * m_hat / (np.sqrt(v_hat) + self.cfg.eps)


@gradlab.register("adam")
def build(cfg):
    return Adam(cfg)
