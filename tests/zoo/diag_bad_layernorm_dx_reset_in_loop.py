"""Broken: backward loops over the samples and creates dx anew inside the loop, so only the last sample's
input gradient survives; forward computes the batch at once (no per-sample cache)."""
import numpy as np

import gradlab
from diag_bad_layernorm_last_sample_cache import LayerNorm, _backward


class ResetsDx(LayerNorm):
    def forward(self, x):
        mu = x.mean(axis=-1, keepdims=True)
        rstd = 1.0 / np.sqrt(x.var(axis=-1, keepdims=True) + self.eps)
        self.xhat, self.rstd = (x - mu) * rstd, rstd
        return self.params["gamma"] * self.xhat + self.params["beta"]

    def backward(self, dout):
        self.grads["gamma"] = np.zeros_like(self.params["gamma"])
        self.grads["beta"] = np.zeros_like(self.params["beta"])
        for b in range(dout.shape[0]):
            dx = np.zeros_like(dout)                                      # BUG: made anew for every sample
            dx[b], dg, db = _backward(dout[b], (self.xhat[b], self.rstd[b], self.params["gamma"]))
            self.grads["gamma"] += dg
            self.grads["beta"] += db
        return dx


@gradlab.register("layernorm")
def build(cfg):
    return ResetsDx(cfg.d_model, cfg.eps, cfg.dtype)
