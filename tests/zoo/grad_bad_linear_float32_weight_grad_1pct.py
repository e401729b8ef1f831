"""Broken, at float32's resolution: a linear computing in float32 whose weight gradient is 1.01 x the
right one. The float32 second look (a near miss judged again at a new input) let it pass on seed 20."""
import numpy as np

import gradlab


class Linear:
    def __init__(self, cfg):
        rng = np.random.default_rng(cfg.seed)
        self.weight = (rng.standard_normal((cfg.d_model, cfg.d_model)) / np.sqrt(cfg.d_model)).astype(np.float32)
        self.bias = np.zeros(cfg.d_model, dtype=np.float32)

    def forward(self, x):
        self.x = x.astype(np.float32)
        return self.x @ self.weight + self.bias

    def backward(self, g):
        g = g.astype(np.float32)
        x2, g2 = self.x.reshape(-1, self.x.shape[-1]), g.reshape(-1, g.shape[-1])
        self.dweight = np.float32(1.01) * (x2.T @ g2)
        self.dbias = g2.sum(0)
        return g @ self.weight.T


@gradlab.register("linear")
def build(cfg):
    return Linear(cfg)
