"""Broken twins: the embedding's rows take one occurrence of a repeated id (a max over the one-hot
column instead of a sum); the positional gradient is a mean over the batch."""
import numpy as np

import gradlab
from style_float32_backward import Embedding, Positional


class OneOccurrence(Embedding):
    @staticmethod
    def accumulate(onehot, rows):
        last = np.zeros((onehot.shape[1], rows.shape[1]), dtype=np.float32)
        last[onehot.argmax(axis=1)] = rows        # BUG: repeated ids keep one row (np.add.at would sum)
        return last


class BatchMean(Positional):
    @staticmethod
    def batch_total(g):
        return g.mean(axis=0)                     # BUG: a sum over the batch


@gradlab.register("embedding")
def embedding(cfg):
    return OneOccurrence(cfg.vocab_size, cfg.d_model, cfg.dtype, cfg.seed)


@gradlab.register("positional")
def positional(cfg):
    return BatchMean(cfg.max_len, cfg.d_model, cfg.dtype, cfg.seed)
