"""Broken: backward feeds the attention branch the block's upstream gradient dout instead
of dh, the gradient at h (which includes what flows back through the FFN)."""
import gradlab
from bwdvar_block_parts import Block


class AttnGetsUpstream(Block):
    def backward(self, dout):
        dh = dout + self.ln2.backward(self.ffn.backward(dout))
        return dh + self.ln1.backward(self.attn.backward(dout))    # BUG: attn.backward(dh)


@gradlab.register("block")
def build(cfg):
    return AttnGetsUpstream(cfg)
