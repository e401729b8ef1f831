"""A Linear whose forward returns np.ma.masked_greater(out, 1.0): large
outputs are masked, so they have no value to check. Named in one line (it
used to be accepted and fail later with an unrelated broadcast error).
With MASK_ABOVE = inf nothing is masked: accepted, judged by its numbers."""
import numpy as np

import gradlab

MASK_ABOVE = 1.0


class MaskedLinear:
    def __init__(self, d_in, d_out, dtype):
        rng = np.random.default_rng(0)
        self.params = {"weight": (rng.standard_normal((d_in, d_out)) / np.sqrt(d_in)).astype(dtype),
                       "bias": np.zeros(d_out, dtype=dtype)}
        self.grads = {}

    def forward(self, x):
        self.x = x
        return np.ma.masked_greater(x @ self.params["weight"] + self.params["bias"], MASK_ABOVE)

    def backward(self, g):
        g = np.ma.getdata(g)
        d_in, d_out = self.params["weight"].shape
        self.grads["weight"] = self.x.reshape(-1, d_in).T @ g.reshape(-1, d_out)
        self.grads["bias"] = g.reshape(-1, d_out).sum(axis=0)
        return g @ self.params["weight"].T


@gradlab.register("linear")
def build(cfg):
    return MaskedLinear(cfg.d_model, cfg.d_ff, cfg.dtype)
