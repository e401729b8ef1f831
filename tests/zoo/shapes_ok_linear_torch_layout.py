"""Correct: PyTorch's layout, weight (d_out, d_in) and y = x @ W.T + b, d_out = 7 (not square), Parameter
objects with .data/.grad, and a param_map function that loads the reference's weight transposed."""
import numpy as np, gradlab

class Parameter:
    def __init__(self, data):
        self.data = data; self.grad = None

class Linear:
    """torch layout: weight (out, in); y = x @ W.T + b; Parameter objects."""
    def __init__(self, d_in, d_out, dtype, seed):
        rng = np.random.default_rng(seed)
        self.weight = Parameter((rng.standard_normal((d_out, d_in)) / np.sqrt(d_in)).astype(dtype))
        self.bias = Parameter(np.zeros(d_out, dtype=dtype))
    def forward(self, x):
        self.cache = (x,)
        return x @ self.weight.data.T + self.bias.data
    def backward(self, g):
        (x,) = self.cache
        d_out = g.shape[-1]; d_in = x.shape[-1]
        g2 = g.reshape(-1, d_out); x2 = x.reshape(-1, d_in)
        self.weight.grad = g2.T @ x2
        self.bias.grad = g2.sum(axis=0)
        return g @ self.weight.data

def load(module, ref):
    module.weight.data[...] = ref["weight"].T
    module.bias.data[...] = ref["bias"]

@gradlab.register("linear", param_map=load)
def build(cfg):
    return Linear(cfg.d_model, 7, cfg.dtype, cfg.seed)
