"""The decoder's dmemory is dropped: the encoder and the source embedding never learn."""
import gradlab
from art_parts import Seq2Seq, load_seq2seq


@gradlab.register("seq2seq", param_map=load_seq2seq)
def build(cfg):
    return Seq2Seq(cfg, drop_encoder_grad=True)
