"""dmemory forgets the value path: only dK @ Wk^T flows back to the encoder."""
import gradlab
from art_parts import CrossAttention, load_cross


class NoValuePath(CrossAttention):
    def backward(self, g):
        dx, dmemory = super().backward(g)
        dv = self.merge(self.attn_weights.transpose(0, 1, 3, 2) @ self.heads(g @ self.Wo.T))
        return dx, dmemory - dv @ self.Wv.T


@gradlab.register("cross_attention", param_map=load_cross)
def build(cfg):
    return NoValuePath(cfg)
