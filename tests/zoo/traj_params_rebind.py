"""Broken: SGD that rebinds params[name] to a new array instead of updating in place."""
import gradlab


class SGD:
    def __init__(self, lr):
        self.lr = lr

    def step(self, params, grads):
        for name in params:
            params[name] = params[name] - self.lr * grads[name]


@gradlab.register("sgd")
def build(cfg):
    return SGD(cfg.lr)
