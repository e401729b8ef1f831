"""Broken: the tiny lm whose token embedding's gradient has the tied output projection's path only: the
lookup path (np.add.at(dE, ids, dx)) is forgotten."""
import gradlab
from repeated_ids_ok_tiny_lm import TinyLM


class HeadOnly(TinyLM):
    def embed_grad(self, dE, dx):
        pass                                    # BUG: the lookup's gradient never reaches the table


@gradlab.register("lm")
def build(cfg):
    return HeadOnly(cfg.vocab_size, cfg.d_model, cfg.max_len, cfg.dtype)
