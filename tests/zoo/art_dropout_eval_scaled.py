"""Classic (non-inverted) scaling at evaluation on top of inverted training: forward multiplies by (1-p) when
training is False, backward does not. The gradient check sees backward disagree with forward by 1/(1-p)."""
import gradlab
from art_dropout_ok import Dropout


class EvalScaled(Dropout):
    def forward(self, x, training=True):
        if not training:
            self.mask = None
            return x * (1 - self.p)
        return super().forward(x, training)

    def backward(self, grad_out):
        return grad_out if self.mask is None else grad_out * self.mask


@gradlab.register("dropout")
def build(cfg):
    return EvalScaled(cfg.dropout)
