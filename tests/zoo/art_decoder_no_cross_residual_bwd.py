"""Post-LN decoder layer whose forward is right and whose backward drops the cross-attention sub-layer's
residual: the gradient at h1 is the cross-attention's dx alone, without the skip path's ds2."""
import gradlab
from art_parts import Decoder, load_decoder


class NoCrossSkip(Decoder):
    def backward(self, g):
        g = self.ln3.backward(g)
        g = g + self.ffn.backward(g)
        g = self.ln2.backward(g)
        dh, dmemory = self.cross_attn.backward(g)
        g = self.ln1.backward(dh)                       # BUG: + g, the skip path, is missing
        return g + self.self_attn.backward(g), dmemory


@gradlab.register("decoder_layer", param_map=load_decoder)
def build(cfg):
    return NoCrossSkip(cfg)
