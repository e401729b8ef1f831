"""A correct Linear whose parameters are made read-only (a student guarding
them against accidental writes). gradlab changes parameters in place, as an
optimizer's step does, so it names them in one line (it used to end in
"internal error in gradlab's 'input_mutation' check")."""
import numpy as np

import gradlab


class Linear:
    def __init__(self, d_in, d_out, dtype):
        rng = np.random.default_rng(0)
        self.params = {"weight": (rng.standard_normal((d_in, d_out)) / np.sqrt(d_in)).astype(dtype),
                       "bias": np.zeros(d_out, dtype=dtype)}
        for p in self.params.values():
            p.setflags(write=False)
        self.grads = {}

    def forward(self, x):
        self.x = x
        return x @ self.params["weight"] + self.params["bias"]

    def backward(self, g):
        d_in, d_out = self.params["weight"].shape
        self.grads["weight"] = self.x.reshape(-1, d_in).T @ g.reshape(-1, d_out)
        self.grads["bias"] = g.reshape(-1, d_out).sum(axis=0)
        return g @ self.params["weight"].T


@gradlab.register("linear")
def build(cfg):
    return Linear(cfg.d_model, cfg.d_ff, cfg.dtype)
