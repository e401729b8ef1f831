"""LayerNorm that always computes in float32 internally (a memory-minded student), keepdims=False
statistics broadcast by [..., None]; params stored as torch-like 'weight'/'bias', param_map dict."""
import numpy as np
import gradlab


class LayerNorm32:
    def __init__(self, normalized_shape, eps=1e-5, dtype="float64"):
        self.eps = eps
        self.out_dtype = np.dtype(dtype)
        self.weight = np.ones(normalized_shape, dtype=dtype)
        self.bias = np.zeros(normalized_shape, dtype=dtype)
        self.grad_weight = None
        self.grad_bias = None

    def forward(self, x):
        x32 = x.astype(np.float32)
        mu = x32.mean(axis=-1)
        xc = x32 - mu[..., None]
        var = (xc * xc).mean(axis=-1)
        rstd = 1.0 / np.sqrt(var + np.float32(self.eps))
        self.xhat = xc * rstd[..., None]
        self.rstd = rstd
        y = self.xhat * self.weight.astype(np.float32) + self.bias.astype(np.float32)
        return y.astype(x.dtype)

    def backward(self, dy):
        dy32 = dy.astype(np.float32)
        D = dy.shape[-1]
        xhat = self.xhat
        self.grad_weight = (dy32 * xhat).reshape(-1, D).sum(0).astype(self.weight.dtype)
        self.grad_bias = dy32.reshape(-1, D).sum(0).astype(self.bias.dtype)
        g = dy32 * self.weight.astype(np.float32)
        dx = (g - g.mean(-1)[..., None] - xhat * (g * xhat).mean(-1)[..., None]) * self.rstd[..., None]
        return dx.astype(dy.dtype)


@gradlab.register("layernorm", param_map={"weight": "gamma", "bias": "beta"})
def build(cfg):
    return LayerNorm32(cfg.d_model, eps=cfg.eps, dtype=cfg.dtype)
