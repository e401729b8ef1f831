"""Known-buggy forwards of the encoder and decoder layers and the seq2seq model (article 000), for the
`reference` check: (hint, fn(ref, inputs, cfg) -> output), where ref is gradlab's
reference module holding the student's weights (already run forward once) and
inputs forward's arguments (a tuple; x itself for a one-input kind). Each is the reference's computation with one slip,
made of the reference's own functions (gradlab.modules, imported when a variant runs: ref is one of them already)."""
import math

import numpy as np

from gradlab.diagnosis.backward_variants import _gelu_tanh as _gelu


def _layernorm(x, gamma, beta, eps):
    mu, var = x.mean(-1, keepdims=True), x.var(-1, keepdims=True)
    return gamma * (x - mu) / np.sqrt(var + eps) + beta


def _relu(h):
    return np.maximum(h, 0)


def _article_layernorm(x, gamma, beta, eps):
    """Article 000 §4.2's layer_norm: (x - mean) / (std + 1e-6), eps outside the square root."""
    return gamma * (x - x.mean(-1, keepdims=True)) / (x.std(-1, keepdims=True) + 1e-6) + beta


def _encoder(norm="post", causal=False, act=_relu, heads_axis=False, layernorm=None):
    def run(ref, inputs, cfg):
        from gradlab.modules.functional import softmax
        x = inputs[0] if isinstance(inputs, tuple) else inputs     # one-input kinds get x itself
        p, H = ref.params, ref.H
        B, T, D = x.shape

        def attn(a):
            if heads_axis:   # article 000 §5: reshape(-1, H, d_k) then a matmul over the heads axis
                q, k, v = (np.reshape(a @ p[n], (B * T, H, D // H)) for n in ("W_Q", "W_K", "W_V"))
                w = softmax(q @ k.transpose(0, 2, 1) / math.sqrt(D // H))       # (B*T, H, H)
                return (w @ v).reshape(B, T, D) @ p["W_O"]
            q, k, v = (ref._split(a @ p[n]) for n in ("W_Q", "W_K", "W_V"))
            s = q @ k.transpose(0, 1, 3, 2) / math.sqrt(q.shape[-1])
            if causal:
                s = np.where(np.tril(np.ones((T, T), bool)), s, -np.inf)
            return ref._merge(softmax(s) @ v) @ p["W_O"]

        def ffn(a):
            return act(a @ p["W1"] + p["b1"]) @ p["W2"] + p["b2"]

        def ln(a, i):
            return (layernorm or _layernorm)(a, p["gamma" + i], p["beta" + i], ref.eps)

        if norm == "pre":
            h = x + attn(ln(x, "1"))
            return h + ffn(ln(h, "2"))
        h = ln(x + attn(x), "1")
        return ln(h + ffn(h), "2")
    return run


def _decoder(cross_causal=False, norm="post"):
    def run(ref, inputs, cfg):
        from gradlab.modules.cross_attention import masked_softmax    # blocked keys at 0, all-blocked rows 0
        x, memory, pad = inputs
        c = ref.cross_attn
        if norm == "pre":
            h1 = x + ref.self_attn.forward(ref.ln1.forward(x))
            h2 = h1 + c.forward(ref.ln2.forward(h1), memory, pad)
            return h2 + ref.ffn.forward(ref.ln3.forward(h2))
        h1 = ref.ln1.forward(x + ref.self_attn.forward(x))
        q = c._split(h1 @ c.params["q_weight"] + c.params["q_bias"])
        k, v = (c._split(a) for a in np.split(memory @ c.params["kv_weight"] + c.params["kv_bias"], 2, axis=-1))
        s = q @ k.transpose(0, 1, 3, 2) / math.sqrt(q.shape[-1])
        T, S = s.shape[-2:]
        blocked = np.asarray(pad, bool)[:, None, None, :]
        if cross_causal:
            blocked = blocked | np.triu(np.ones((T, S), bool), k=1)
        cross = c._merge(masked_softmax(s, blocked) @ v) @ c.params["out_weight"] + c.params["out_bias"]
        h2 = ref.ln2.forward(h1 + cross)
        return ref.ln3.forward(h2 + ref.ffn.forward(h2))
    return run


def _scaled_embeddings(ref, inputs, cfg):
    """The reference seq2seq with both embedding lookups multiplied by sqrt(d_model), as the Transformer paper
    and the Annotated Transformer do (its output projection is a weight of its own, so scaling the tables is
    the same as scaling the lookups)."""
    p = ref.params
    saved = {k: p[k].copy() for k in ("src_embedding", "tgt_embedding")}
    try:
        for k in saved:
            p[k] *= math.sqrt(p[k].shape[-1])
        return ref.forward(*inputs)
    finally:
        for k, v in saved.items():
            p[k][...] = v


_HEADS_AXIS = ("your output matches attention over the heads axis instead of the positions: article 000's layer "
               "reshapes Q to (T, n_heads, d_k) and multiplies Q @ K.transpose(0, 2, 1), which mixes heads, not time "
               "steps; split heads as (B, T, H, d_k).transpose(0, 2, 1, 3) so the scores are (B, H, T, T)")

VARIANTS = {
    "encoder_layer": [
        (_HEADS_AXIS, _encoder(heads_axis=True)),
        (_HEADS_AXIS + " (and its layer_norm divides by std + 1e-6: eps belongs inside the square root, "
         "sqrt(var + eps))", _encoder(heads_axis=True, layernorm=_article_layernorm)),
        ("your output matches LayerNorm as article 000 writes it, (x - mean) / (std + 1e-6): the contract's "
         "LayerNorm has eps inside the square root, (x - mean) / sqrt(var + cfg.eps) (the layernorm kind's)",
         _encoder(layernorm=_article_layernorm)),
        ("your output matches a causal mask in the encoder: an encoder layer sees the whole sentence, no mask",
         _encoder(causal=True)),
        ("your output matches a Pre-LN layer (x + attn(LN(x))); this kind is Post-LN: LN(x + attn(x)), then "
         "LN(h + ffn(h))", _encoder(norm="pre")),
        ("your output matches a GELU FFN; the encoder layer's FFN uses ReLU (article 000)", _encoder(act=_gelu)),
    ],
    "seq2seq": [
        ("your output matches embeddings multiplied by sqrt(d_model) (the Transformer paper's E[ids] * sqrt(d_model)); "
         "this kind's embedding is the plain lookup E[ids] plus the sinusoidal encoding, as article 000 writes it",
         _scaled_embeddings),
    ],
    "decoder_layer": [
        ("your output matches a causal mask in the cross-attention: the decoder may see all of the encoder's "
         "memory; only its self-attention over x is causal", _decoder(cross_causal=True)),
        ("your output matches a Pre-LN decoder layer; this kind is Post-LN: LN(x + sublayer(x)) after each of "
         "self-attention, cross-attention and the FFN", _decoder(norm="pre")),
    ],
}
