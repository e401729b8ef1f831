"""Broken for PyTorch's semantics: momentum SGD as the textbooks write it, without weight decay (cfg's
weight_decay is 0 by default; trajectory's second run moves it to 0.01)."""
import gradlab


class SGD:
    def __init__(self, lr, momentum):
        self.lr, self.momentum, self.buf = lr, momentum, {}

    def step(self, params, grads):
        for name, p in params.items():
            g = grads[name]
            b = self.buf.get(name)
            b = g.copy() if b is None else self.momentum * b + g
            self.buf[name] = b
            p -= self.lr * b


@gradlab.register("sgd")
def build(cfg):
    return SGD(cfg.lr, cfg.momentum)
