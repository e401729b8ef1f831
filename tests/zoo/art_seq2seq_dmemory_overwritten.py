"""Each decoder layer's dmemory replaces the last one's (dm = d) instead of adding to it: the encoder gets
the first decoder layer's share alone."""
import gradlab
from art_parts import Seq2Seq, load_seq2seq


@gradlab.register("seq2seq", param_map=load_seq2seq)
def build(cfg):
    return Seq2Seq(cfg, last_dmemory_only=True)
