"""Broken twin: fancy-index assignment instead of np.add.at (a repeated id keeps
only its last gradient)."""
import gradlab
from style_slots import Embedding


class Overwrite(Embedding):
    __slots__ = ()

    def scatter(self, dout):
        self.dweight[self.ids] = dout                  # BUG: np.add.at(self.dweight, self.ids, dout)


@gradlab.register("embedding")
def build(cfg):
    return Overwrite(cfg.vocab_size, cfg.d_model, cfg.dtype, cfg.seed)
