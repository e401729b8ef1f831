"""float16 parameters in a forward that computes in float64 (x @ W upcasts):
the output looks fine, but a finite-difference step on a float16 parameter
rounds away, and no float64 copy can be built: its gradient cannot be judged."""
import numpy as np

import gradlab


class Linear:
    def __init__(self, d_in, d_out):
        rng = np.random.default_rng(0)
        self.params = {"weight": (rng.standard_normal((d_in, d_out)) / np.sqrt(d_in)).astype(np.float16),
                       "bias": np.zeros(d_out)}
        self.grads = {}

    def forward(self, x):
        self.x = x
        return x @ self.params["weight"].astype(x.dtype) + self.params["bias"]

    def backward(self, g):
        d_in, d_out = self.params["weight"].shape
        self.grads["weight"] = (self.x.reshape(-1, d_in).T @ g.reshape(-1, d_out)).astype(np.float16)
        self.grads["bias"] = g.reshape(-1, d_out).sum(axis=0)
        return g @ self.params["weight"].T.astype(g.dtype)


@gradlab.register("linear")
def build(cfg):
    return Linear(cfg.d_model, cfg.d_ff)
