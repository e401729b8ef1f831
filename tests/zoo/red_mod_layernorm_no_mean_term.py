"""Broken: the step-by-step (computational graph) LayerNorm backward forgets the path
through the mean: dx = dxc without subtracting the mean of dxc."""
import numpy as np

import gradlab


class LN:
    def __init__(self, d, eps):
        self.gamma = np.ones(d)
        self.beta = np.zeros(d)
        self.eps = eps

    def forward(self, x):
        mean = np.mean(x, axis=-1, keepdims=True)
        xmu = x - mean
        sq = xmu ** 2
        var = np.mean(sq, axis=-1, keepdims=True)
        sqrtvar = np.sqrt(var + self.eps)
        ivar = 1.0 / sqrtvar
        xhat = xmu * ivar
        self.cache = (xhat, xmu, ivar, sqrtvar, var)
        return self.gamma * xhat + self.beta

    def backward(self, dout):
        xhat, xmu, ivar, sqrtvar, var = self.cache
        D = dout.shape[-1]
        self.dbeta = dout.sum(axis=(0, 1))
        self.dgamma = (dout * xhat).sum(axis=(0, 1))
        dxhat = dout * self.gamma
        divar = np.sum(dxhat * xmu, axis=-1, keepdims=True)
        dxmu1 = dxhat * ivar
        dsqrtvar = -1.0 / (sqrtvar ** 2) * divar
        dvar = 0.5 / np.sqrt(var + self.eps) * dsqrtvar
        dsq = np.ones_like(xmu) / D * dvar
        dxmu2 = 2 * xmu * dsq
        dx1 = dxmu1 + dxmu2
        # BUG: the mean branch  dmu = -sum(dx1); dx2 = dmu / D  is missing
        return dx1


@gradlab.register("layernorm")
def build(cfg):
    return LN(cfg.d_model, cfg.eps)
