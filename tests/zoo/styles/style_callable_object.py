"""Style: functional ops wrapped in classes, called like functions (Keras-style
`Softmax(axis)` objects with __call__), and an Adam that keeps its state in lists by
position, zipping params.values() with grads.values()."""
import numpy as np

import gradlab


class Softmax:
    """softmax(x, axis=-1) as a callable object."""

    def __call__(self, x, axis=-1):
        shifted = x - self.row_max(x, axis)
        e = np.exp(shifted)
        return e / np.sum(e, axis=axis, keepdims=True)

    @staticmethod
    def row_max(x, axis):
        return np.max(x, axis=axis, keepdims=True)


class Adam:
    def __init__(self, lr, betas=(0.9, 0.999), eps=1e-8, weight_decay=0.0):
        self.lr, (self.b1, self.b2), self.eps, self.wd = lr, betas, eps, weight_decay
        self.m, self.v, self.t = None, None, 0

    def step(self, params, grads):
        values, gradients = list(params.values()), [grads[k] for k in params]
        if self.m is None:
            self.m = [np.zeros_like(p) for p in values]
            self.v = [np.zeros_like(p) for p in values]
        self.t += 1
        for i, (p, g) in enumerate(zip(values, gradients)):
            g = g + self.wd * p                         # torch.optim.Adam's (coupled) L2 weight decay
            self.m[i] = self.b1 * self.m[i] + (1 - self.b1) * g
            self.v[i] = self.b2 * self.v[i] + (1 - self.b2) * g * g
            p -= self.update(i)

    def update(self, i):
        m_hat = self.m[i] / (1 - self.b1 ** self.t)
        v_hat = self.v[i] / (1 - self.b2 ** self.t)
        return self.lr * m_hat / (np.sqrt(v_hat) + self.eps)


gradlab.register("softmax")(Softmax())


@gradlab.register("adam")
def build(cfg):
    return Adam(cfg.lr, (cfg.beta1, cfg.beta2), cfg.eps, cfg.weight_decay)
