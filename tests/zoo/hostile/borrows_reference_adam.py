"""An optimizer class of its own whose step is gradlab's Adam's, called unbound (optim.py holds three kinds'
references: Adam is adam's)."""
import gradlab
from gradlab.modules.optim import Adam


class MyAdam:
    def __init__(self, cfg):
        Adam.__init__(self, cfg.lr, cfg.beta1, cfg.beta2, cfg.eps, cfg.weight_decay)

    def step(self, params, grads):
        Adam.step(self, params, grads)


@gradlab.register("adam")
def build(cfg):
    return MyAdam(cfg)
