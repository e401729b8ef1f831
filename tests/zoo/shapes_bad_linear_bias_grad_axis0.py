"""Broken for 3-d inputs: nnfs' Layer_Dense bias gradient, np.sum(dvalues, axis=0, keepdims=True), written for
(N, D) inputs: with (B, T, D) it keeps the time axis, (1, T, D)."""
import numpy as np
import gradlab


class Dense:
    def __init__(self, n_in, n_out, dtype, seed):
        r = np.random.RandomState(seed)
        self.weights = (0.1 * r.randn(n_in, n_out)).astype(dtype)
        self.biases = np.zeros((1, n_out), dtype=dtype)

    def forward(self, inputs):
        self.inputs = inputs
        return inputs @ self.weights + self.biases

    def backward(self, dvalues):
        n_in, n_out = self.weights.shape
        X = self.inputs.reshape(-1, n_in)
        G = dvalues.reshape(-1, n_out)
        self.dweights = X.T @ G
        self.dbiases = np.sum(dvalues, axis=0, keepdims=True)       # BUG: sum over axes (0, 1) for (B, T, D)
        return dvalues @ self.weights.T


@gradlab.register("linear")
def build(cfg):
    return Dense(cfg.d_model, 7, cfg.dtype, cfg.seed)
