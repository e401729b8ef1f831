"""Broken: forward has both residuals; backward drops the skip path of the FFN sub-layer
(dh is only the gradient through ffn and ln2)."""
import gradlab
from bwdvar_block_parts import Block


class NoFFNResidualBackward(Block):
    def backward(self, dout):
        dh = self.ln2.backward(self.ffn.backward(dout))            # BUG: + dout is missing
        return dh + self.ln1.backward(self.attn.backward(dh))


@gradlab.register("block")
def build(cfg):
    return NoFFNResidualBackward(cfg)
