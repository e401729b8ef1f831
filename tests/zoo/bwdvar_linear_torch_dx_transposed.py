"""Broken: a linear in PyTorch's layout (weight (d_out, d_in), out = x @ weight.T), square, whose
backward returns grad_out @ weight.T: the input gradient through the weight the wrong way round."""
import numpy as np

import gradlab


class Linear:
    def __init__(self, d, dtype, seed):
        rng = np.random.default_rng(seed)
        self.weight = (rng.standard_normal((d, d)) / np.sqrt(d)).astype(dtype)
        self.bias = np.zeros(d, dtype)

    def forward(self, x):
        self.x = x
        return x @ self.weight.T + self.bias

    def backward(self, dy):
        d = self.weight.shape[1]
        self.grad_weight = dy.reshape(-1, d).T @ self.x.reshape(-1, d)
        self.grad_bias = dy.reshape(-1, d).sum(0)
        return dy @ self.weight.T                                  # BUG: dy @ self.weight


def load(module, ref):
    module.weight[...] = ref["weight"].T
    module.bias[...] = ref["bias"]


@gradlab.register("linear", param_map=load)
def build(cfg):
    return Linear(cfg.d_model, cfg.dtype, cfg.seed)
