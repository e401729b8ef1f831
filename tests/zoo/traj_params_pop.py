"""Broken: SGD that removes each parameter from the caller's dict as it updates it (params.pop)."""
import gradlab


class SGD:
    def __init__(self, lr):
        self.lr = lr

    def step(self, params, grads):
        for name in list(params):
            p = params.pop(name)
            p -= self.lr * grads[name]


@gradlab.register("sgd")
def build(cfg):
    return SGD(cfg.lr)
