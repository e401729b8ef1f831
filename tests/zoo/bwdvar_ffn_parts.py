"""A student's GELU FFN (tanh approximation) with attribute-style gradients,
written so each bwdvar_ffn_* variant overrides only the activation's derivative.
Correct as it is; it registers nothing (the variants do)."""
import numpy as np

C = np.sqrt(2.0 / np.pi)


class MLP:
    def __init__(self, d_model, d_ff, dtype):
        rng = np.random.default_rng(3)
        self.w1 = (rng.standard_normal((d_model, d_ff)) * np.sqrt(2.0 / d_model)).astype(dtype)
        self.b1 = np.zeros(d_ff, dtype)
        self.w2 = (rng.standard_normal((d_ff, d_model)) * np.sqrt(2.0 / d_ff)).astype(dtype)
        self.b2 = np.zeros(d_model, dtype)

    def forward(self, x):
        self.x = x
        self.h = x @ self.w1 + self.b1
        self.a = 0.5 * self.h * (1 + np.tanh(C * (self.h + 0.044715 * self.h ** 3)))
        return self.a @ self.w2 + self.b2

    def dgelu(self):
        h = self.h
        t = np.tanh(C * (h + 0.044715 * h ** 3))
        return 0.5 * (1 + t) + 0.5 * h * (1 - t ** 2) * C * (1 + 3 * 0.044715 * h ** 2)

    def backward(self, dout):
        D, F = self.w1.shape
        dgelu = self.dgelu()
        self.dw2 = self.a.reshape(-1, F).T @ dout.reshape(-1, D)
        self.db2 = dout.reshape(-1, D).sum(0)
        dh = (dout @ self.w2.T) * dgelu
        self.dw1 = self.x.reshape(-1, D).T @ dh.reshape(-1, F)
        self.db1 = dh.reshape(-1, F).sum(0)
        return dh @ self.w1.T
