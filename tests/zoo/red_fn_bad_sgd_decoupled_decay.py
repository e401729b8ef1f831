"""Broken: SGD with momentum whose weight decay is decoupled, AdamW's way (p *= 1 - lr * wd beside the
buffer); torch.optim.SGD adds weight_decay * p to the gradient before the buffer."""
import gradlab


class SGD:
    def __init__(self, cfg):
        self.lr, self.momentum, self.wd, self.buf = cfg.lr, cfg.momentum, cfg.weight_decay, {}

    def step(self, params, grads):
        for name, p in params.items():
            g = grads[name]
            self.buf[name] = g.copy() if name not in self.buf else self.momentum * self.buf[name] + g
            p *= 1 - self.lr * self.wd
            p -= self.lr * self.buf[name]


@gradlab.register("sgd")
def build(cfg):
    return SGD(cfg)
