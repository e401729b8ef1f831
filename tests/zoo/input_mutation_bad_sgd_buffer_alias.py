"""Broken: SGD with momentum keeps the caller's first gradient array itself as
its momentum buffer and then updates the buffer in place, so step 2 rewrites
the gradients the caller passed to step 1."""
import gradlab


class SGD:
    def __init__(self, lr, momentum):
        self.lr, self.mu, self.buf = lr, momentum, {}

    def step(self, params, grads):
        for k, p in params.items():
            if k not in self.buf:
                self.buf[k] = grads[k]          # no copy: this is the caller's array
            else:
                self.buf[k] *= self.mu
                self.buf[k] += grads[k]
            p -= self.lr * self.buf[k]


@gradlab.register("sgd")
def build(cfg):
    return SGD(cfg.lr, cfg.momentum)
