"""Broken: forward has both residuals; backward chains the sub-layers as if there were none."""
import gradlab
from bwdvar_block_parts import Block


class NoResidualsBackward(Block):
    def backward(self, dout):
        dh = self.ln2.backward(self.ffn.backward(dout))            # BUG: + dout is missing
        return self.ln1.backward(self.attn.backward(dh))           # BUG: + dh is missing


@gradlab.register("block")
def build(cfg):
    return NoResidualsBackward(cfg)
