"""An encoder-decoder from the parts: attribute-pair embeddings, a param_map function."""
import gradlab
from art_parts import Seq2Seq, load_seq2seq


@gradlab.register("seq2seq", param_map=load_seq2seq)
def build(cfg):
    return Seq2Seq(cfg)
