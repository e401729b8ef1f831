"""A Linear kept in float16 whatever cfg.dtype says, whose weight gradient is
3x too large. Finite differences in float16 are too coarse to catch it (it
passed `gradient` within a tolerance of 0.34), and no float64 copy of it can be
built, so its gradient cannot be judged: an error, never a pass. FACTOR = 1 is
the correct module: the same error."""
import numpy as np

import gradlab

FACTOR = 3


class Linear16:
    def __init__(self, d_in, d_out):
        rng = np.random.default_rng(0)
        self.params = {"weight": (rng.standard_normal((d_in, d_out)) / np.sqrt(d_in)).astype(np.float16),
                       "bias": np.zeros(d_out, dtype=np.float16)}
        self.grads = {}

    def forward(self, x):
        self.x = x.astype(np.float16)
        return self.x @ self.params["weight"] + self.params["bias"]

    def backward(self, g):
        g = g.astype(np.float16)
        d_in, d_out = self.params["weight"].shape
        self.grads["weight"] = FACTOR * (self.x.reshape(-1, d_in).T @ g.reshape(-1, d_out))
        self.grads["bias"] = g.reshape(-1, d_out).sum(axis=0)
        return g @ self.params["weight"].T


@gradlab.register("linear")
def build(cfg):
    return Linear16(cfg.d_model, cfg.d_ff)
