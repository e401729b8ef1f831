"""Broken: the parts' Pre-LN block (bwdvar_block_parts.py) whose second LayerNorm is the first one again
(self.ln2 = self.ln1): one set of parameters, one forward cache, overwritten by the second use."""
import gradlab
from bwdvar_block_parts import Block


@gradlab.register("block")
def build(cfg):
    block = Block(cfg)
    block.ln2 = block.ln1                                          # BUG: a LayerNorm of its own
    return block
