"""Broken: the scores are divided by dk ** 1 / 2 (that is dk / 2: ** binds first), forward and backward
alike; position 0 attends to itself alone and is right whatever the scale."""
import gradlab
from einsum_attention_parts import MHA


class Precedence(MHA):
    def scale(self):
        return self.dk ** 1 / 2                                   # BUG: self.dk ** 0.5


@gradlab.register("attention")
def build(cfg):
    return Precedence(cfg.d_model, cfg.num_heads, cfg.dtype, cfg.seed)
