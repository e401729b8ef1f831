"""Correct: a post-LN encoder layer of PyTorch-minded children: Linear, LN and MHA objects called with
__call__ (no forward), each holding Parameter objects (.data/.grad) or children of its own, with a back()
method; PyTorch's (out, in) layout and a param_map function."""
import numpy as np
import gradlab

def _ln_f(x, g, b, eps):
    mu = np.mean(x, -1, keepdims=True)
    xc = x - mu
    var = np.mean(xc * xc, -1, keepdims=True)
    rstd = (var + eps) ** -0.5
    xn = xc * rstd
    return xn * g + b, (xn, rstd)

def _ln_b(dy, cache, g):
    xn, rstd = cache
    D = dy.shape[-1]
    dxn = dy * g
    dx = (D * dxn - dxn.sum(-1, keepdims=True) - xn * (dxn * xn).sum(-1, keepdims=True)) * rstd / D
    ax = tuple(range(dy.ndim - 1))
    return dx, (dy * xn).sum(ax), dy.sum(ax)

def _heads(a, H):
    B, L, D = a.shape
    return a.reshape(B, L, H, D // H).swapaxes(1, 2)

def _unheads(a):
    B, H, L, d = a.shape
    return a.swapaxes(1, 2).reshape(B, L, H * d)

def _softmax_b(A, dA):
    return A * (dA - np.einsum('bhts,bhts->bht', dA, A)[..., None])

def _mha_f(q, k, v, H, mask_add=None):
    """q (B,T,D), k, v (B,S,D) projected; additive mask broadcast to (B,H,T,S)"""
    Q, K, Vv = _heads(q, H), _heads(k, H), _heads(v, H)
    s = np.einsum('bhtd,bhsd->bhts', Q, K) / np.sqrt(Q.shape[-1])
    if mask_add is not None:
        s = s + mask_add
    s = s - s.max(-1, keepdims=True)
    e = np.exp(s)
    A = e / e.sum(-1, keepdims=True)
    ctx = _unheads(np.einsum('bhts,bhsd->bhtd', A, Vv))
    return ctx, (Q, K, Vv, A)

def _mha_b(dctx, cache, H):
    Q, K, Vv, A = cache
    dC = _heads(dctx, H)
    dA = np.einsum('bhtd,bhsd->bhts', dC, Vv)
    dV = np.einsum('bhts,bhtd->bhsd', A, dC)
    ds = _softmax_b(A, dA) / np.sqrt(Q.shape[-1])
    dQ = np.einsum('bhts,bhsd->bhtd', ds, K)
    dK = np.einsum('bhts,bhtd->bhsd', ds, Q)
    return _unheads(dQ), _unheads(dK), _unheads(dV)

def _sumrows(a):
    return a.reshape(-1, a.shape[-1]).sum(0)

def _outer(a, b):
    return a.reshape(-1, a.shape[-1]).T @ b.reshape(-1, b.shape[-1])

class Param:
    def __init__(self, data):
        self.data = data; self.grad = None

class Linear:
    def __init__(self, r, i, o, bias, dt):
        self.weight = Param((r.standard_normal((o, i)) / np.sqrt(i)).astype(dt))   # torch layout (out, in)
        self.bias = Param(np.zeros(o, dt)) if bias else None
    def __call__(self, x):
        self.x = x
        y = x @ self.weight.data.T
        return y + self.bias.data if self.bias is not None else y
    def back(self, g):
        self.weight.grad = _outer(g, self.x)      # (out, in)
        if self.bias is not None:
            self.bias.grad = _sumrows(g)
        return g @ self.weight.data

class LN:
    def __init__(self, D, eps, dt):
        self.weight = Param(np.ones(D, dt)); self.bias = Param(np.zeros(D, dt)); self.eps = eps
    def __call__(self, x):
        y, self.c = _ln_f(x, self.weight.data, self.bias.data, self.eps); return y
    def back(self, g):
        dx, self.weight.grad, self.bias.grad = _ln_b(g, self.c, self.weight.data); return dx

class MHA:
    def __init__(self, r, D, H, dt):
        self.H = H
        self.q = Linear(r, D, D, False, dt); self.k = Linear(r, D, D, False, dt)
        self.v = Linear(r, D, D, False, dt); self.o = Linear(r, D, D, False, dt)
    def __call__(self, x):
        ctx, self.c = _mha_f(self.q(x), self.k(x), self.v(x), self.H)
        return self.o(ctx)
    def back(self, g):
        dq, dk, dv = _mha_b(self.o.back(g), self.c, self.H)
        return self.q.back(dq) + self.k.back(dk) + self.v.back(dv)

class EncoderNested:
    def __init__(self, D, H, F, eps, dt, seed):
        r = np.random.default_rng(seed)
        self.attn = MHA(r, D, H, dt); self.norm1 = LN(D, eps, dt)
        self.fc1 = Linear(r, D, F, True, dt); self.fc2 = Linear(r, F, D, True, dt); self.norm2 = LN(D, eps, dt)
    def forward(self, x):
        h = self.norm1(x + self.attn(x))
        self.z = self.fc1(h)
        return self.norm2(h + self.fc2(np.maximum(self.z, 0)))
    def backward(self, g):
        d2 = self.norm2.back(g)
        dh = d2 + self.fc1.back(self.fc2.back(d2) * (self.z > 0))
        d1 = self.norm1.back(dh)
        return d1 + self.attn.back(d1)

def load(m, ref):
    for mine, theirs in (("attn.q", "W_Q"), ("attn.k", "W_K"), ("attn.v", "W_V"), ("attn.o", "W_O"), ("fc1", "W1"), ("fc2", "W2")):
        a, b = mine.split(".") if "." in mine else (mine, None)
        lin = getattr(m, a) if b is None else getattr(getattr(m, a), b)
        lin.weight.data[...] = ref[theirs].T
    m.fc1.bias.data[...] = ref["b1"]; m.fc2.bias.data[...] = ref["b2"]
    m.norm1.weight.data[...] = ref["gamma1"]; m.norm1.bias.data[...] = ref["beta1"]
    m.norm2.weight.data[...] = ref["gamma2"]; m.norm2.bias.data[...] = ref["beta2"]

@gradlab.register("encoder_layer", param_map=load)
def build(cfg):
    return EncoderNested(cfg.d_model, cfg.num_heads, cfg.d_ff, cfg.eps, cfg.dtype, cfg.seed)
