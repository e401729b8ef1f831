"""Broken: Adam-shaped SGD that empties the caller's dict from its second step on (params.clear), so smoke,
which steps once, passes and every later optimizer check meets the missing keys."""
import gradlab


class SGD:
    def __init__(self, lr):
        self.lr, self.t = lr, 0

    def step(self, params, grads):
        self.t += 1
        if self.t >= 2:
            params.clear()
        for name, p in params.items():
            p -= self.lr * grads[name]


@gradlab.register("adam")
def build(cfg):
    return SGD(cfg.lr)
