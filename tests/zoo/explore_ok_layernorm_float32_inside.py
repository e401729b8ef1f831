"""LayerNorm that does its arithmetic in float32 whatever cfg.dtype says
(a GPU-habit student: "float32 is enough"), casting the result back to the
input's dtype. Params kept in cfg.dtype."""
import numpy as np
import gradlab


class LayerNorm32:
    def __init__(self, D, eps, dtype):
        self.eps = np.float32(eps)
        self.params = {"gamma": np.ones(D, dtype), "beta": np.zeros(D, dtype)}
        self.grads = {"gamma": np.zeros(D, dtype), "beta": np.zeros(D, dtype)}

    def forward(self, x):
        self.in_dtype = x.dtype
        x = x.astype(np.float32)
        g = self.params["gamma"].astype(np.float32)
        b = self.params["beta"].astype(np.float32)
        mu = x.mean(-1, keepdims=True)
        var = ((x - mu) ** 2).mean(-1, keepdims=True)
        self.rstd = 1 / np.sqrt(var + self.eps)
        self.xhat = (x - mu) * self.rstd
        return (self.xhat * g + b).astype(self.in_dtype)

    def backward(self, dy):
        D = dy.shape[-1]
        dy = dy.astype(np.float32)
        g = self.params["gamma"].astype(np.float32)
        self.grads["gamma"][...] = (dy * self.xhat).reshape(-1, D).sum(0)
        self.grads["beta"][...] = dy.reshape(-1, D).sum(0)
        dxh = dy * g
        dx = self.rstd * (dxh - dxh.mean(-1, keepdims=True) - self.xhat * (dxh * self.xhat).mean(-1, keepdims=True))
        return dx.astype(self.in_dtype)


@gradlab.register("layernorm")
def build(cfg):
    return LayerNorm32(cfg.d_model, cfg.eps, cfg.dtype)
