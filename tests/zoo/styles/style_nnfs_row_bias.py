"""Style: "neural networks from scratch" layers: `weights` and `biases` with `dweights` and
`dbiases`, the bias kept as a row of shape (1, n) (np.zeros((1, n_neurons))); the FFN is two
Dense layers around a GELU, each working on the tokens flattened to rows. Registered with a dict
param_map from the dotted names to the reference's."""
import numpy as np

import gradlab


class Dense:
    def __init__(self, n_inputs, n_neurons, rng, dtype):
        self.weights = (rng.standard_normal((n_inputs, n_neurons)) / np.sqrt(n_inputs)).astype(dtype)
        self.biases = np.zeros((1, n_neurons), dtype=dtype)

    def forward(self, inputs):
        self.inputs = inputs
        return inputs @ self.weights + self.biases

    def backward(self, dvalues):
        self.dweights = self.inputs.T @ dvalues
        self.dbiases = self.bias_grad(dvalues)
        return dvalues @ self.weights.T

    @staticmethod
    def bias_grad(dvalues):
        return np.sum(dvalues, axis=0, keepdims=True)


class GELU:
    C = np.sqrt(2 / np.pi)

    def forward(self, x):
        self.x = x
        self.t = np.tanh(self.C * (x + 0.044715 * x ** 3))
        return 0.5 * x * (1 + self.t)

    def backward(self, dvalues):
        x, t = self.x, self.t
        return dvalues * (0.5 * (1 + t) + 0.5 * x * (1 - t ** 2) * self.C * (1 + 3 * 0.044715 * x ** 2))


class FFN:
    Layer = Dense

    def __init__(self, cfg):
        rng = np.random.default_rng(cfg.seed)
        self.dense1 = self.Layer(cfg.d_model, cfg.d_ff, rng, cfg.np_dtype)
        self.activation = GELU()
        self.dense2 = self.Layer(cfg.d_ff, cfg.d_model, rng, cfg.np_dtype)

    def forward(self, x):
        self.shape = x.shape
        rows = x.reshape(-1, x.shape[-1])
        return self.dense2.forward(self.activation.forward(self.dense1.forward(rows))).reshape(x.shape)

    def backward(self, dvalues):
        rows = dvalues.reshape(-1, dvalues.shape[-1])
        return self.dense1.backward(self.activation.backward(self.dense2.backward(rows))).reshape(self.shape)


NAMES = {"dense1.weights": "w1", "dense1.biases": "b1", "dense2.weights": "w2", "dense2.biases": "b2"}


@gradlab.register("ffn", param_map=NAMES)
def build(cfg):
    return FFN(cfg)
