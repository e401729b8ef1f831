"""Correct: the nnfs book's Layer_Dense habit: weights and biases (1, n_neurons), dweights and dbiases
from backward, dinputs kept and returned; weights drawn with RandomState."""
import numpy as np

import gradlab


class Layer_Dense:
    def __init__(self, n_inputs, n_neurons, dtype, seed):
        rs = np.random.RandomState(seed)
        self.weights = (0.01 * rs.randn(n_inputs, n_neurons)).astype(dtype)
        self.biases = np.zeros((1, n_neurons), dtype=dtype)

    def forward(self, inputs):
        self.inputs = inputs
        self.output = np.dot(inputs, self.weights) + self.biases
        return self.output

    def backward(self, dvalues):
        flat_in = self.inputs.reshape(-1, self.weights.shape[0])
        flat_d = dvalues.reshape(-1, self.weights.shape[1])
        self.dweights = np.dot(flat_in.T, flat_d)
        self.dbiases = np.sum(flat_d, axis=0, keepdims=True)
        self.dinputs = np.dot(dvalues, self.weights.T)
        return self.dinputs


@gradlab.register("linear")
def build(cfg):
    return Layer_Dense(cfg.d_model, cfg.d_model, cfg.dtype, cfg.seed)
