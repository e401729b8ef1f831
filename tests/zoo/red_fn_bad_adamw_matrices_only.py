"""Broken for the contract: AdamW that decays only parameters of 2 or more axes, as nanoGPT's parameter
groups do (biases and gains undecayed); torch.optim.AdamW, and CONTRACT §3, decay every parameter given."""
import numpy as np

import gradlab


class AdamW:
    def __init__(self, cfg):
        self.cfg, self.t, self.m, self.v = cfg, 0, {}, {}

    def step(self, params, grads):
        c = self.cfg
        self.t += 1
        for name, p in params.items():
            if p.ndim >= 2:
                p *= 1 - c.lr * c.weight_decay
            g = grads[name]
            self.m[name] = c.beta1 * self.m.get(name, 0.0) + (1 - c.beta1) * g
            self.v[name] = c.beta2 * self.v.get(name, 0.0) + (1 - c.beta2) * g * g
            m_hat = self.m[name] / (1 - c.beta1 ** self.t)
            v_hat = self.v[name] / (1 - c.beta2 ** self.t)
            p -= c.lr * m_hat / (np.sqrt(v_hat) + c.eps)


@gradlab.register("adamw")
def build(cfg):
    return AdamW(cfg)
