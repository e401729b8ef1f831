"""The padding mask multiplied into the weights after the softmax, not renormalised: the padded keys get
weight 0, yet their scores are still in the softmax's sum."""
import gradlab
from art_parts import CrossAttention, load_cross, softmax


class MaskAfter(CrossAttention):
    def forward(self, x, memory, key_padding_mask=None):
        self.self_attention, self.x, self.m = False, x, memory
        self.q, self.k, self.v = (self.heads(a @ getattr(self, "W" + n) + getattr(self, "b" + n))
                                  for a, n in ((x, "q"), (memory, "k"), (memory, "v")))
        A = softmax(self.q @ self.k.transpose(0, 1, 3, 2) * self.q.shape[-1] ** -0.5)
        if key_padding_mask is not None:
            A = A * ~key_padding_mask[:, None, None, :]           # BUG: after the softmax
        self.attn_weights = A
        self.ctx = self.merge(A @ self.v)
        return self.ctx @ self.Wo + self.bo


@gradlab.register("cross_attention", param_map=load_cross)
def build(cfg):
    return MaskAfter(cfg)
