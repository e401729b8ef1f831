"""Broken: the source embedding's gradient is written with dE[src] = dm (one occurrence of an id kept)."""
import gradlab
from art_parts import Seq2Seq, load_seq2seq


class Overwrite(Seq2Seq):
    @staticmethod
    def scatter_src(table, ids, rows):
        table[ids] = rows                                               # BUG: np.add.at(table, ids, rows)


@gradlab.register("seq2seq", param_map=load_seq2seq)
def build(cfg):
    return Overwrite(cfg)
