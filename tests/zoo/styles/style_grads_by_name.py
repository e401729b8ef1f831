"""Style: parameters as plain float32 attributes (`self.weight`, `self.bias`, torch's
names) and their gradients in a `self.grads` dict keyed by the attribute names, as
numpy "megatron"-like projects keep them. Registered with a dict param_map, the
thinnest wrapper for names that differ from the reference's (CONTRACT §1)."""
import numpy as np

import gradlab


class LayerNorm:
    def __init__(self, d_model, eps, rng):
        self.weight = (1 + 0.1 * rng.standard_normal(d_model)).astype(np.float32)
        self.bias = np.zeros(d_model, dtype=np.float32)
        self.eps = eps
        self.grads = {"weight": None, "bias": None}

    def forward(self, inputs):
        mean = inputs.mean(axis=-1, keepdims=True)
        std = np.sqrt(self.variance(inputs, mean) + self.eps)
        self.ctx = ((inputs - mean) / std, std)
        return self.weight * self.ctx[0] + self.bias

    @staticmethod
    def variance(inputs, mean):
        return ((inputs - mean) ** 2).mean(axis=-1, keepdims=True)

    def backward(self, d_out):
        normalized, std = self.ctx
        self.grads["weight"] = (d_out * normalized).sum(axis=(0, 1))
        self.grads["bias"] = d_out.sum(axis=(0, 1))
        d_norm = d_out * self.weight
        D = d_out.shape[-1]
        return (D * d_norm - d_norm.sum(-1, keepdims=True)
                - normalized * (d_norm * normalized).sum(-1, keepdims=True)) / (D * std)


@gradlab.register("layernorm", param_map={"weight": "gamma", "bias": "beta"})
def build(cfg):
    return LayerNorm(cfg.d_model, cfg.eps, np.random.default_rng(cfg.seed))
