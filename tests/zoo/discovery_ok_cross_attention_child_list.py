"""Correct: cross-attention whose projections live in a child holding nothing but a list of four Linear
objects (the Annotated Transformer's self.linears), called with __call__, with no forward, and here a
backward of its own (discovery_ok_cross_attention_child_list_no_backward.py: without one). It was not
walked: its parameters were never found (smoke: "found no parameters with gradients")."""
import numpy as np
import gradlab



class Linear:
    def __init__(self, d_in, d_out, rng, dtype):
        self.weight = (rng.standard_normal((d_in, d_out)) / np.sqrt(d_in)).astype(dtype)
        self.bias = np.zeros(d_out, dtype)

    def __call__(self, x):
        self.x = x
        return x @ self.weight + self.bias

    def backward(self, g):
        self.dweight = self.x.reshape(-1, self.x.shape[-1]).T @ g.reshape(-1, g.shape[-1])
        self.dbias = g.reshape(-1, g.shape[-1]).sum(0)
        return g @ self.weight.T


class Projections:                      # holds nothing but a list: [q, k, v, out]
    def __init__(self, D, rng, dtype):
        self.linears = [Linear(D, D, rng, dtype) for _ in range(4)]

    def __call__(self, x, memory):
        q, k, v = self.linears[0](x), self.linears[1](memory), self.linears[2](memory)
        return q, k, v


class ProjectionsWithBackward(Projections):
    def backward(self, dq, dk, dv):
        return self.linears[0].backward(dq), self.linears[1].backward(dk) + self.linears[2].backward(dv)


class CrossAttention:
    def __init__(self, cfg, projections=ProjectionsWithBackward):
        rng = np.random.default_rng(cfg.seed)
        self.H = cfg.num_heads
        self.proj = projections(cfg.d_model, rng, cfg.dtype)

    def forward(self, x, memory, key_padding_mask=None):
        B, T, D = x.shape
        S, H = memory.shape[1], self.H
        sp = lambda a: a.reshape(B, -1, H, D // H).transpose(0, 2, 1, 3)
        q, k, v = (sp(t) for t in self.proj(x, memory))
        s = q @ k.transpose(0, 1, 3, 2) / np.sqrt(D // H)
        if key_padding_mask is not None:
            s = np.where(key_padding_mask[:, None, None, :], -1e9, s)
        e = np.exp(s - s.max(-1, keepdims=True))
        self.a, self.q, self.k, self.v = e / e.sum(-1, keepdims=True), q, k, v
        ctx = (self.a @ v).transpose(0, 2, 1, 3).reshape(B, T, D)
        return self.proj.linears[3](ctx)

    def backward(self, g):
        B, T, D = g.shape
        H = self.H
        sp = lambda a: a.reshape(B, -1, H, D // H).transpose(0, 2, 1, 3)
        mg = lambda a: a.transpose(0, 2, 1, 3).reshape(B, -1, D)
        dctx = sp(self.proj.linears[3].backward(g))
        dA = dctx @ self.v.transpose(0, 1, 3, 2)
        dv = self.a.transpose(0, 1, 3, 2) @ dctx
        ds = self.a * (dA - (dA * self.a).sum(-1, keepdims=True)) / np.sqrt(D // H)
        dq, dk, dv = mg(ds @ self.k), mg(ds.transpose(0, 1, 3, 2) @ self.q), mg(dv)
        L = self.proj.linears
        return L[0].backward(dq), L[1].backward(dk) + L[2].backward(dv)


def load(m, ref):
    D = ref["q_weight"].shape[0]
    L = m.proj.linears
    L[0].weight[...], L[0].bias[...] = ref["q_weight"], ref["q_bias"]
    L[1].weight[...], L[1].bias[...] = ref["kv_weight"][:, :D], ref["kv_bias"][:D]
    L[2].weight[...], L[2].bias[...] = ref["kv_weight"][:, D:], ref["kv_bias"][D:]
    L[3].weight[...], L[3].bias[...] = ref["out_weight"], ref["out_bias"]


@gradlab.register("cross_attention", param_map=load)
def build(cfg):
    return CrossAttention(cfg)
