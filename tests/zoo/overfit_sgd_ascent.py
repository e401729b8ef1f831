"""Broken: SGD that adds the gradient (gradient ascent)."""
import gradlab


class SGD:
    def __init__(self, cfg):
        self.lr, self.mu, self.buf = cfg.lr, cfg.momentum, {}

    def step(self, params, grads):
        for k, p in params.items():
            self.buf[k] = self.mu * self.buf.get(k, 0) + grads[k]
            p += self.lr * self.buf[k]


@gradlab.register("sgd")
def build(cfg):
    return SGD(cfg)
