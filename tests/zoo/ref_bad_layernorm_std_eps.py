"""Broken for the contract (eps inside the square root): (x - mean) / (std + eps), consistent in backward.
In float32 at eps = 1e-5 the difference rounds away; the reference check's eps = 0.1 run shows it."""
import numpy as np, gradlab

class LayerNorm:
    """eps added to the std (x-mu)/(std+eps) (annotated-transformer style)."""
    def __init__(self, D, eps, dtype):
        self.params = {"gamma": np.ones(D, dtype=dtype), "beta": np.zeros(D, dtype=dtype)}
        self.grads = {}
        self.eps = eps
    def forward(self, x):
        mu = x.mean(-1, keepdims=True); xc = x - mu
        std = np.sqrt((xc**2).mean(-1, keepdims=True))
        d = std + self.eps
        xhat = xc / d
        self.c = (xc, std, d, xhat)
        return self.params["gamma"] * xhat + self.params["beta"]
    def backward(self, dy):
        xc, std, d, xhat = self.c
        D = xc.shape[-1]
        self.grads["gamma"] = (dy * xhat).reshape(-1, D).sum(0)
        self.grads["beta"] = dy.reshape(-1, D).sum(0)
        g = dy * self.params["gamma"]
        # xhat = xc/d ; d = std+eps ; std = sqrt(mean(xc^2)); xc = x - mean(x)
        dxc = g / d
        dd = -(g * xc).sum(-1, keepdims=True) / d**2
        dstd = dd
        dxc += dstd * xc / (D * std)
        return dxc - dxc.mean(-1, keepdims=True)

@gradlab.register("layernorm")
def build(cfg):
    return LayerNorm(cfg.d_model, cfg.eps, cfg.dtype)
