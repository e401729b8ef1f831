"""Correct: PyTorch's nn.Module bookkeeping rebuilt in NumPy. A Parameter is an ndarray subclass carrying
.grad (as torch's Parameter is a Tensor); Module.__setattr__ files parameters into an ordered
`_parameters` dict, child modules into `_modules` and buffers (a constant of the same type) into
`_buffers`, and __getattr__ serves them, so none is an attribute of its own. Linear keeps weight as (out_features, in_features) and computes x @ weight.T, so the
reference's weights are copied in by a param_map function."""
from collections import OrderedDict

import numpy as np

import gradlab


class Parameter(np.ndarray):
    def __new__(cls, data):
        out = np.asarray(data).view(cls)
        out.grad = None
        return out

    def __array_finalize__(self, obj):
        if not hasattr(self, "grad"):
            self.grad = None


class Module:
    def __init__(self):
        object.__setattr__(self, "_parameters", OrderedDict())
        object.__setattr__(self, "_buffers", OrderedDict())
        object.__setattr__(self, "_modules", OrderedDict())

    def register_buffer(self, name, value):
        self._buffers[name] = value

    def __setattr__(self, name, value):
        if isinstance(value, Parameter):
            self._parameters[name] = value
        elif isinstance(value, Module):
            self._modules[name] = value
        else:
            object.__setattr__(self, name, value)

    def __getattr__(self, name):
        for store in ("_parameters", "_buffers", "_modules"):
            found = self.__dict__.get(store, {})
            if name in found:
                return found[name]
        raise AttributeError(name)

    def __call__(self, *args):
        return self.forward(*args)


class Linear(Module):
    def __init__(self, d_in, d_out, rng, dtype):
        super().__init__()
        bound = 1.0 / np.sqrt(d_in)
        self.weight = Parameter(rng.uniform(-bound, bound, (d_out, d_in)).astype(dtype))
        self.bias = Parameter(np.zeros(d_out, dtype=dtype))

    def forward(self, x):
        self.x = x
        return x @ np.asarray(self.weight).T + np.asarray(self.bias)

    def backward(self, dy):
        d_out = dy.shape[-1]
        self.weight.grad = dy.reshape(-1, d_out).T @ self.x.reshape(-1, self.x.shape[-1])
        self.bias.grad = self.bias_grad(dy)
        return dy @ np.asarray(self.weight)

    def bias_grad(self, dy):
        return dy.reshape(-1, dy.shape[-1]).sum(axis=0)


class FeedForward(Module):
    def __init__(self, d_model, d_ff, rng, dtype, linear=Linear):
        super().__init__()
        self.fc1 = linear(d_model, d_ff, rng, dtype)
        self.fc2 = linear(d_ff, d_model, rng, dtype)
        # a constant kept as a buffer, of the same type as the parameters (torch's register_buffer): no parameter
        self.register_buffer("gelu_c", Parameter(np.array([np.sqrt(2 / np.pi), 0.044715])))

    def forward(self, x):
        self.h = self.fc1(x)
        c, k = np.asarray(self.gelu_c)
        self.t = np.tanh(c * (self.h + k * self.h ** 3))
        return self.fc2(0.5 * self.h * (1 + self.t))

    def backward(self, dy):
        da = self.fc2.backward(dy)
        dt = np.sqrt(2 / np.pi) * (1 + 3 * 0.044715 * self.h ** 2) * (1 - self.t ** 2)
        return self.fc1.backward(da * (0.5 * (1 + self.t) + 0.5 * self.h * dt))


def load(module, ref):
    """Reference weights are (d_in, d_out), used as x @ W: this module's are their transposes."""
    module.fc1.weight[...] = ref["w1"].T
    module.fc1.bias[...] = ref["b1"]
    module.fc2.weight[...] = ref["w2"].T
    module.fc2.bias[...] = ref["b2"]


@gradlab.register("ffn", param_map=load)
def build(cfg):
    return FeedForward(cfg.d_model, cfg.d_ff, np.random.default_rng(cfg.seed), cfg.dtype)
