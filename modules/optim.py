"""Optimizers with PyTorch's semantics. step(params, grads) updates the
arrays of `params` in place (p -= ..., never rebinding); state is kept per
parameter name."""
import numpy as np

import gradlab


class SGD:
    """torch.optim.SGD: optional coupled weight decay (g += wd * p), then
    momentum buf = momentum * buf + g (buf = g on the first step), p -= lr * buf."""

    def __init__(self, lr, momentum=0.0, weight_decay=0.0):
        self.lr, self.momentum, self.weight_decay = lr, momentum, weight_decay
        self.buf = {}                                   # name -> momentum buffer

    def step(self, params, grads):
        for name, p in params.items():
            if name not in grads:                       # no gradient, no update (as torch)
                continue
            g = grads[name]
            if self.weight_decay > 0:
                g = g + self.weight_decay * p           # a new array: the caller's grads are untouched
            if self.momentum > 0:
                if name not in self.buf:
                    self.buf[name] = g.copy()
                else:
                    self.buf[name] = self.momentum * self.buf[name] + g
                g = self.buf[name]
            p -= self.lr * g


class Adam:
    """torch.optim.Adam: m, v moving averages of g and g^2, bias-corrected with
    the step count t (one t per step() call, not per parameter),
    p -= lr * m_hat / (sqrt(v_hat) + eps). weight_decay > 0 adds the coupled
    L2 term g += wd * p (torch.optim.Adam); AdamW decouples it."""

    decoupled = False

    def __init__(self, lr, beta1=0.9, beta2=0.999, eps=1e-8, weight_decay=0.0):
        self.lr, self.beta1, self.beta2, self.eps, self.weight_decay = lr, beta1, beta2, eps, weight_decay
        self.t = 0
        self.m, self.v = {}, {}                         # name -> first / second moment

    def step(self, params, grads):
        self.t += 1
        b1, b2 = self.beta1, self.beta2
        for name, p in params.items():
            if name not in grads:
                continue
            g = grads[name]
            if self.weight_decay > 0:
                if self.decoupled:
                    p *= 1 - self.lr * self.weight_decay     # AdamW: shrink the weights directly
                else:
                    g = g + self.weight_decay * p            # Adam: L2 term in the gradient
            m = self.m[name] = b1 * self.m.get(name, 0) + (1 - b1) * g
            v = self.v[name] = b2 * self.v.get(name, 0) + (1 - b2) * g * g
            m_hat = m / (1 - b1 ** self.t)
            v_hat = v / (1 - b2 ** self.t)
            p -= self.lr * m_hat / (np.sqrt(v_hat) + self.eps)


class AdamW(Adam):
    """torch.optim.AdamW: theta *= 1 - lr * weight_decay, then the Adam update
    without any L2 term in the gradient."""

    decoupled = True


@gradlab.register("sgd")
def build_sgd(cfg):
    return SGD(cfg.lr, momentum=cfg.momentum, weight_decay=cfg.weight_decay)


@gradlab.register("adam")
def build_adam(cfg):
    return Adam(cfg.lr, cfg.beta1, cfg.beta2, cfg.eps, weight_decay=cfg.weight_decay)


@gradlab.register("adamw")
def build_adamw(cfg):
    return AdamW(cfg.lr, cfg.beta1, cfg.beta2, cfg.eps, weight_decay=cfg.weight_decay)
