"""The mask kept by forward already holds 1/(1-p); backward divides by (1 - p) again (while training)."""
import gradlab
from art_dropout_ok import Dropout


class TwiceScaled(Dropout):
    def forward(self, x, training=True):
        self.training = training
        return super().forward(x, training)

    def backward(self, grad_out):
        return grad_out * self.mask / (1 - self.p) if self.training else grad_out * self.mask


@gradlab.register("dropout")
def build(cfg):
    return TwiceScaled(cfg.dropout)
