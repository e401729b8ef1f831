"""The block of found_block.py with one quiet bug deep inside a child: the
FFN's w2 gradient is twice too large. The failure must name 'ffn.w2'."""
import gradlab
from found_block import Block
from found_parts import FeedForward


class DoubledFeedForward(FeedForward):
    def backward(self, dy):
        dx = super().backward(dy)
        self.g["w2"] = 2 * self.g["w2"]      # BUG: wrong scale factor
        return dx


@gradlab.register("block")
def build(cfg):
    block = Block(cfg)
    block.ffn.__class__ = DoubledFeedForward
    return block
