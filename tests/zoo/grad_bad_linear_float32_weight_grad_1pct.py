"""Broken, at float32's resolution: gradlab's reference linear with float32 parameters and a float32 forward,
whose weight gradient is 1.01 x the right one. The float32 second look (a near miss judged again at a new
input) let it pass on seeds 20 and 30."""
import numpy as np

import gradlab
from gradlab.contract.kinds import linear_d_out


class Linear:
    """x (..., d_in) -> x @ weight + bias (..., d_out). weight (d_in, d_out), bias (d_out,)."""

    def __init__(self, d_in, d_out, dtype="float64", seed=0):
        rng = np.random.default_rng(seed)
        self.params = {
            "weight": (rng.standard_normal((d_in, d_out)) / np.sqrt(d_in)).astype(dtype),
            "bias": (0.1 * rng.standard_normal(d_out)).astype(dtype),
        }
        self.grads = {k: np.zeros_like(v) for k, v in self.params.items()}

    def forward(self, x):                       # x (..., d_in)
        self.x = x = np.asarray(x, np.float32)
        return x @ self.params["weight"] + self.params["bias"]     # (..., d_out)

    def backward(self, grad_out):               # grad_out (..., d_out)
        d_in, d_out = self.params["weight"].shape
        x2 = self.x.reshape(-1, d_in)           # (N, d_in), N = product of the leading axes
        g2 = grad_out.reshape(-1, d_out)        # (N, d_out)
        self.grads["weight"] = (x2.T @ g2) * np.float32(1 + 1e-2)       # (d_in, d_out)
        self.grads["bias"] = g2.sum(axis=0)     # (d_out,)
        return grad_out @ self.params["weight"].T                  # (..., d_in)


@gradlab.register("linear")
def build(cfg):
    # d_out is a linear's own choice (CONTRACT §3): when gradlab checks a student's linear it
    # builds this reference as wide as theirs; on its own it is d_ff wide
    return Linear(cfg.d_model, linear_d_out(cfg), dtype="float32", seed=cfg.seed)
