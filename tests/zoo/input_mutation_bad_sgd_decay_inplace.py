"""Broken only with weight decay on: an SGD adding the L2 term into the caller's gradient (d += wd * p
edits grads[k]; the default weight_decay of 0 never reaches that line)."""
import gradlab


class SGD:
    def __init__(self, lr, momentum, weight_decay):
        self.lr, self.momentum, self.weight_decay = lr, momentum, weight_decay
        self.velocity = {}

    def step(self, params, grads):
        for name, p in params.items():
            d = grads[name]
            if self.weight_decay:
                d += self.weight_decay * p                 # BUG: the caller's array; d = d + ... is a new one
            if self.momentum:
                v = self.velocity.get(name)
                v = d.copy() if v is None else self.momentum * v + d
                self.velocity[name] = v
                d = v
            p -= self.lr * d


@gradlab.register("sgd")
def build(cfg):
    return SGD(cfg.lr, cfg.momentum, cfg.weight_decay)
