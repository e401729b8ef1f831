"""A correct Post-LN encoder layer, CS231n style: module-level forward/backward functions returning
caches; the layer keeps params/grads as aligned LISTS with a `names` list; einsum attention. Registers
nothing itself: bwdvar_encoder_ok_cs231n.py registers it, bwdvar_encoder_ln_no_variance.py with one
LayerNorm backward of its own (the layer calls self.ln_bwd)."""
import numpy as np

NAMES = ["W_Q", "W_K", "W_V", "W_O", "W1", "b1", "W2", "b2", "gamma1", "beta1", "gamma2", "beta2"]


def affine_fwd(x, w, b=None):
    out = x @ w if b is None else x @ w + b
    return out, (x, w)


def affine_bwd(dout, cache):
    x, w = cache
    dw = x.reshape(-1, x.shape[-1]).T @ dout.reshape(-1, dout.shape[-1])
    db = dout.reshape(-1, dout.shape[-1]).sum(0)
    return dout @ w.T, dw, db


def ln_fwd(x, g, b, eps):
    mu = x.mean(-1, keepdims=True)
    var = x.var(-1, keepdims=True)
    s = np.sqrt(var + eps)
    xh = (x - mu) / s
    return g * xh + b, (xh, s, g)


def ln_bwd(dout, cache):
    xh, s, g = cache
    D = xh.shape[-1]
    dg = (dout * xh).reshape(-1, D).sum(0)
    db = dout.reshape(-1, D).sum(0)
    dxh = dout * g
    dvar_term = (dxh * xh).mean(-1, keepdims=True)
    dx = (dxh - dxh.mean(-1, keepdims=True) - xh * dvar_term) / s
    return dx, dg, db


def mha_fwd(x, WQ, WK, WV, WO, H):
    B, T, D = x.shape
    dk = D // H
    q = np.einsum("btd,de->bte", x, WQ).reshape(B, T, H, dk)
    k = np.einsum("btd,de->bte", x, WK).reshape(B, T, H, dk)
    v = np.einsum("btd,de->bte", x, WV).reshape(B, T, H, dk)
    s = np.einsum("bqhd,bkhd->bhqk", q, k) / np.sqrt(dk)
    s -= s.max(-1, keepdims=True)
    a = np.exp(s)
    a /= a.sum(-1, keepdims=True)
    ctx = np.einsum("bhqk,bkhd->bqhd", a, v).reshape(B, T, D)
    return ctx @ WO, (x, q, k, v, a, ctx, WQ, WK, WV, WO, H)


def mha_bwd(dout, cache):
    x, q, k, v, a, ctx, WQ, WK, WV, WO, H = cache
    B, T, D = x.shape
    dk = D // H
    dWO = np.einsum("btd,bte->de", ctx, dout)
    dctx = (dout @ WO.T).reshape(B, T, H, dk)
    da = np.einsum("bqhd,bkhd->bhqk", dctx, v)
    dv = np.einsum("bhqk,bqhd->bkhd", a, dctx).reshape(B, T, D)
    ds = a * (da - np.einsum("bhqk,bhqk->bhq", da, a)[..., None]) / np.sqrt(dk)
    dq = np.einsum("bhqk,bkhd->bqhd", ds, k).reshape(B, T, D)
    dkk = np.einsum("bhqk,bqhd->bkhd", ds, q).reshape(B, T, D)
    dWQ, dWK, dWV = (np.einsum("btd,bte->de", x, d) for d in (dq, dkk, dv))
    dx = dq @ WQ.T + dkk @ WK.T + dv @ WV.T
    return dx, dWQ, dWK, dWV, dWO


class Encoder:
    ln_bwd = staticmethod(ln_bwd)

    def __init__(self, cfg):
        r = np.random.default_rng(cfg.seed)
        D, F, dt = cfg.d_model, cfg.d_ff, cfg.dtype
        mk = {"W1": (D, F), "W2": (F, D)}
        self.params = []
        for n in NAMES:
            if n.startswith("W_"):
                a = r.standard_normal((D, D)) / np.sqrt(D)
            elif n in mk:
                a = r.standard_normal(mk[n]) / np.sqrt(mk[n][0])
            elif n.startswith("gamma"):
                a = 1 + 0.1 * r.standard_normal(D)
            else:
                a = 0.1 * r.standard_normal(F if n == "b1" else D)
            self.params.append(a.astype(dt))
        self.names = list(NAMES)
        self.grads = [np.zeros_like(p) for p in self.params]
        self.H, self.eps = cfg.num_heads, cfg.eps

    def forward(self, x):
        WQ, WK, WV, WO, W1, b1, W2, b2, g1, be1, g2, be2 = self.params
        att, c_att = mha_fwd(x, WQ, WK, WV, WO, self.H)
        h, c_ln1 = ln_fwd(x + att, g1, be1, self.eps)
        z, c_a1 = affine_fwd(h, W1, b1)
        r = np.maximum(z, 0)
        f, c_a2 = affine_fwd(r, W2, b2)
        out, c_ln2 = ln_fwd(h + f, g2, be2, self.eps)
        self.cache = (c_att, c_ln1, c_a1, z, c_a2, c_ln2)
        return out

    def backward(self, dout):
        c_att, c_ln1, c_a1, z, c_a2, c_ln2 = self.cache
        ds2, dg2, dbe2 = self.ln_bwd(dout, c_ln2)
        dr, dW2, db2 = affine_bwd(ds2, c_a2)
        dh, dW1, db1 = affine_bwd(dr * (z > 0), c_a1)
        dh = dh + ds2
        ds1, dg1, dbe1 = self.ln_bwd(dh, c_ln1)
        dx, dWQ, dWK, dWV, dWO = mha_bwd(ds1, c_att)
        self.grads = [dWQ, dWK, dWV, dWO, dW1, db1, dW2, db2, dg1, dbe1, dg2, dbe2]
        return dx + ds1
