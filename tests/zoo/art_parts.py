"""Student-style parts for the encoder/decoder zoo: attribute pairs (W, dW), separate
Q/K/V/O matrices, -1e9 masks, backward returning (dx, dmemory). Not registered here;
art_cross_*, art_decoder_* and art_encoder_* build on them."""
import numpy as np


def softmax(s):
    e = np.exp(s - s.max(axis=-1, keepdims=True))
    return e / e.sum(axis=-1, keepdims=True)


class LayerNorm:
    def __init__(self, d, eps):
        self.gamma, self.beta, self.eps = np.ones(d), np.zeros(d), eps
        self.dgamma, self.dbeta = np.zeros(d), np.zeros(d)

    def forward(self, x):
        mu, var = x.mean(-1, keepdims=True), x.var(-1, keepdims=True)
        self.xhat, self.rstd = (x - mu) / np.sqrt(var + self.eps), 1 / np.sqrt(var + self.eps)
        return self.gamma * self.xhat + self.beta

    def backward(self, g):
        D = g.shape[-1]
        self.dgamma = (g * self.xhat).reshape(-1, D).sum(0)
        self.dbeta = g.reshape(-1, D).sum(0)
        d = g * self.gamma
        return self.rstd * (d - d.mean(-1, keepdims=True) - self.xhat * (d * self.xhat).mean(-1, keepdims=True))


class ReluFFN:
    def __init__(self, d, d_ff, rng):
        self.W1, self.b1 = rng.standard_normal((d, d_ff)) / np.sqrt(d), np.zeros(d_ff)
        self.W2, self.b2 = rng.standard_normal((d_ff, d)) / np.sqrt(d_ff), np.zeros(d)
        self.dW1, self.db1, self.dW2, self.db2 = (np.zeros_like(a) for a in (self.W1, self.b1, self.W2, self.b2))

    def forward(self, x):
        self.x, self.h = x, x @ self.W1 + self.b1
        return np.maximum(self.h, 0) @ self.W2 + self.b2

    def backward(self, g):
        D = g.shape[-1]
        a = np.maximum(self.h, 0)
        self.dW2, self.db2 = a.reshape(-1, a.shape[-1]).T @ g.reshape(-1, D), g.reshape(-1, D).sum(0)
        dh = (g @ self.W2.T) * (self.h > 0)
        self.dW1 = self.x.reshape(-1, D).T @ dh.reshape(-1, dh.shape[-1])
        self.db1 = dh.reshape(-1, dh.shape[-1]).sum(0)
        return dh @ self.W1.T


class Attention:
    """Queries from x, keys and values from memory (x itself for self-attention)."""

    def __init__(self, d, heads, rng, causal=False):
        self.h, self.causal = heads, causal
        for n in ("q", "k", "v", "o"):
            setattr(self, "W" + n, rng.standard_normal((d, d)) / np.sqrt(d))
            setattr(self, "b" + n, np.zeros(d))
            setattr(self, "dW" + n, np.zeros((d, d)))
            setattr(self, "db" + n, np.zeros(d))

    def heads(self, a):
        B, L, D = a.shape
        return a.reshape(B, L, self.h, D // self.h).transpose(0, 2, 1, 3)

    def merge(self, a):
        B, H, L, dk = a.shape
        return a.transpose(0, 2, 1, 3).reshape(B, L, H * dk)

    def mask(self, scores, pad):
        T, S = scores.shape[-2:]
        blocked = np.zeros((1, 1, T, S), bool)
        if self.causal:
            blocked = blocked | np.triu(np.ones((T, S), bool), k=1)
        if pad is not None:
            blocked = blocked | pad[:, None, None, :]
        return scores - 1e9 * blocked

    def forward(self, x, memory=None, pad=None):
        self.self_attention = memory is None
        memory = x if memory is None else memory
        self.x, self.m = x, memory
        self.q, self.k, self.v = (self.heads(a @ getattr(self, "W" + n) + getattr(self, "b" + n))
                                  for a, n in ((x, "q"), (memory, "k"), (memory, "v")))
        scale = self.q.shape[-1] ** -0.5
        self.attn_weights = softmax(self.mask(self.q @ self.k.transpose(0, 1, 3, 2) * scale, pad))
        self.ctx = self.merge(self.attn_weights @ self.v)
        return self.ctx @ self.Wo + self.bo

    def backward(self, g):
        D = g.shape[-1]
        flat = lambda a: a.reshape(-1, D)                                     # noqa: E731
        A, scale = self.attn_weights, self.q.shape[-1] ** -0.5
        self.dWo, self.dbo = flat(self.ctx).T @ flat(g), flat(g).sum(0)
        dctx = self.heads(g @ self.Wo.T)
        dA = dctx @ self.v.transpose(0, 1, 3, 2)
        ds = A * (dA - (dA * A).sum(-1, keepdims=True)) * scale
        dq, dk, dv = self.merge(ds @ self.k), self.merge(ds.transpose(0, 1, 3, 2) @ self.q), \
            self.merge(A.transpose(0, 1, 3, 2) @ dctx)
        for n, d, inp in (("q", dq, self.x), ("k", dk, self.m), ("v", dv, self.m)):
            setattr(self, "dW" + n, flat(inp).T @ flat(d))
            setattr(self, "db" + n, flat(d).sum(0))
        dx = dq @ self.Wq.T
        dm = dk @ self.Wk.T + dv @ self.Wv.T
        return dx + dm if self.self_attention else (dx, dm)


def load_attention(att, ref, prefix, fused):
    """Reference weights -> separate Wq/Wk/Wv: fused "qkv" (self-attention) or "q" + "kv" (cross)."""
    D = att.Wq.shape[0]
    if fused:
        w, b = ref[prefix + "qkv_weight"], ref[prefix + "qkv_bias"]
        parts = {"q": (w[:, :D], b[:D]), "k": (w[:, D:2 * D], b[D:2 * D]), "v": (w[:, 2 * D:], b[2 * D:])}
    else:
        w, b = ref[prefix + "kv_weight"], ref[prefix + "kv_bias"]
        parts = {"q": (ref[prefix + "q_weight"], ref[prefix + "q_bias"]), "k": (w[:, :D], b[:D]),
                 "v": (w[:, D:], b[D:])}
    parts["o"] = (ref[prefix + "out_weight"], ref[prefix + "out_bias"])
    for n, (wn, bn) in parts.items():
        getattr(att, "W" + n)[...] = wn
        getattr(att, "b" + n)[...] = bn


class Decoder:
    def __init__(self, cfg):
        rng = np.random.default_rng(cfg.seed)
        D = cfg.d_model
        self.self_attn = Attention(D, cfg.num_heads, rng, causal=True)
        self.cross_attn = Attention(D, cfg.num_heads, rng)
        self.ffn = ReluFFN(D, cfg.d_ff, rng)
        self.ln1, self.ln2, self.ln3 = (LayerNorm(D, cfg.eps) for _ in range(3))

    def forward(self, x, memory, key_padding_mask=None):
        h = self.ln1.forward(x + self.self_attn.forward(x))
        h = self.ln2.forward(h + self.cross_attn.forward(h, memory, key_padding_mask))
        return self.ln3.forward(h + self.ffn.forward(h))

    def backward(self, g):
        g = self.ln3.backward(g)
        g = g + self.ffn.backward(g)
        g = self.ln2.backward(g)
        dh, dmemory = self.cross_attn.backward(g)
        g = self.ln1.backward(g + dh)
        return g + self.self_attn.backward(g), dmemory


def load_decoder(module, ref):
    load_attention(module.self_attn, ref, "self_attn.", fused=True)
    load_attention(module.cross_attn, ref, "cross_attn.", fused=False)
    for i, ln in enumerate((module.ln1, module.ln2, module.ln3), 1):
        ln.gamma[...], ln.beta[...] = ref[f"ln{i}.gamma"], ref[f"ln{i}.beta"]
    f = module.ffn
    f.W1[...], f.b1[...], f.W2[...], f.b2[...] = ref["ffn.w1"], ref["ffn.b1"], ref["ffn.w2"], ref["ffn.b2"]


class CrossAttention(Attention):
    def __init__(self, cfg):
        super().__init__(cfg.d_model, cfg.num_heads, np.random.default_rng(cfg.seed))

    def forward(self, x, memory, key_padding_mask=None):
        return super().forward(x, memory, key_padding_mask)


def load_cross(module, ref):
    load_attention(module, ref, "", fused=False)


class Encoder:
    """Post-LN encoder layer from the parts (attention biases kept at 0: the article has none)."""

    def __init__(self, cfg, causal=False, pre_ln=False):
        rng = np.random.default_rng(cfg.seed)
        D = cfg.d_model
        self.attn = Attention(D, cfg.num_heads, rng, causal=causal)
        self.ffn = ReluFFN(D, cfg.d_ff, rng)
        self.ln1, self.ln2 = LayerNorm(D, cfg.eps), LayerNorm(D, cfg.eps)
        self.pre_ln = pre_ln

    def forward(self, x):
        if self.pre_ln:
            h = x + self.attn.forward(self.ln1.forward(x))
            return h + self.ffn.forward(self.ln2.forward(h))
        h = self.ln1.forward(x + self.attn.forward(x))
        return self.ln2.forward(h + self.ffn.forward(h))

    def backward(self, g):
        if self.pre_ln:
            dh = g + self.ln2.backward(self.ffn.backward(g))
            return dh + self.ln1.backward(self.attn.backward(dh))
        g = self.ln2.backward(g)
        g = self.ln1.backward(g + self.ffn.backward(g))
        return g + self.attn.backward(g)


def load_encoder(module, ref):
    """The reference's article names (W_Q, ..., gamma1) into the parts; the biases it has no say on are 0."""
    a = module.attn
    for n, name in (("q", "W_Q"), ("k", "W_K"), ("v", "W_V"), ("o", "W_O")):
        getattr(a, "W" + n)[...] = ref[name]
        getattr(a, "b" + n)[...] = 0
    f = module.ffn
    f.W1[...], f.b1[...], f.W2[...], f.b2[...] = ref["W1"], ref["b1"], ref["W2"], ref["b2"]
    module.ln1.gamma[...], module.ln1.beta[...] = ref["gamma1"], ref["beta1"]
    module.ln2.gamma[...], module.ln2.beta[...] = ref["gamma2"], ref["beta2"]


def sinusoid(length, d):
    pos, i = np.arange(length)[:, None], np.arange(0, d, 2)
    pe = np.zeros((length, d))
    pe[:, 0::2] = np.sin(pos / 10000 ** (i / d))
    pe[:, 1::2] = np.cos(pos / 10000 ** (i / d))[:, :d // 2]
    return pe


class Seq2Seq:
    """Embeddings as attribute pairs (E_src / dE_src), the parts' encoder and decoder layers."""

    def __init__(self, cfg, drop_encoder_grad=False, last_dmemory_only=False):
        rng = np.random.default_rng(cfg.seed)
        V, D = cfg.vocab_size, cfg.d_model
        self.E_src, self.E_tgt = rng.standard_normal((V, D)), rng.standard_normal((V, D))
        self.W_out, self.b_out = rng.standard_normal((D, V)) / np.sqrt(D), np.zeros(V)
        self.dE_src, self.dE_tgt, self.dW_out, self.db_out = (np.zeros_like(a) for a in
                                                              (self.E_src, self.E_tgt, self.W_out, self.b_out))
        self.enc = [Encoder(cfg) for _ in range(cfg.n_layers)]
        self.dec = [Decoder(cfg) for _ in range(cfg.n_layers)]
        self.drop_encoder_grad = drop_encoder_grad
        self.last_dmemory_only = last_dmemory_only

    def forward(self, src, tgt):
        self.src, self.tgt = src, tgt
        m = self.E_src[src] + sinusoid(src.shape[1], self.E_src.shape[1])
        for layer in self.enc:
            m = layer.forward(m)
        h = self.E_tgt[tgt] + sinusoid(tgt.shape[1], self.E_tgt.shape[1])
        for layer in self.dec:
            h = layer.forward(h, m)
        self.h = h
        return h @ self.W_out + self.b_out

    def backward(self, g):
        D, V = self.W_out.shape
        self.dW_out, self.db_out = self.h.reshape(-1, D).T @ g.reshape(-1, V), g.reshape(-1, V).sum(0)
        dh, dm = g @ self.W_out.T, 0
        for layer in reversed(self.dec):
            dh, d = layer.backward(dh)
            dm = d if self.last_dmemory_only else dm + d
        self.dE_tgt = np.zeros_like(self.E_tgt)
        np.add.at(self.dE_tgt, self.tgt, dh)
        if self.drop_encoder_grad:        # the memory's gradient never reaches the encoder
            dm = np.zeros_like(dm)
        for layer in reversed(self.enc):
            dm = layer.backward(dm)
        self.dE_src = np.zeros_like(self.E_src)
        self.scatter_src(self.dE_src, self.src, dm)

    @staticmethod
    def scatter_src(table, ids, rows):
        np.add.at(table, ids, rows)


def load_seq2seq(module, ref):
    module.E_src[...], module.E_tgt[...] = ref["src_embedding"], ref["tgt_embedding"]
    module.W_out[...], module.b_out[...] = ref["out_weight"], ref["out_bias"]
    for i, layer in enumerate(module.enc):
        load_encoder(layer, {k[len(f"encoder.{i}."):]: v for k, v in ref.items() if k.startswith(f"encoder.{i}.")})
    for i, layer in enumerate(module.dec):
        load_decoder(layer, {k[len(f"decoder.{i}."):]: v for k, v in ref.items() if k.startswith(f"decoder.{i}.")})
