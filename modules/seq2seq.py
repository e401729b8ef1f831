"""Encoder-decoder Transformer (article 000 §8): sinusoidal positions, a stack of Post-LN
encoder layers, a stack of Post-LN decoder layers, and an output projection."""
import numpy as np

import gradlab

from .decoder_layer import DecoderLayer
from .encoder_layer import EncoderLayer
from .sinusoidal import positional_encoding


class Seq2Seq:
    """forward(src_ids (B, S), tgt_ids (B, T)) -> logits (B, T, V); backward(grad_logits) -> None.
    src_embedding, tgt_embedding (V, D), out_weight (D, V), out_bias (V); encoder.{i}.* as
    encoder_layer, decoder.{i}.* as decoder_layer. Position t of the logits sees tgt_ids[:, :t+1]
    and all of src_ids (teacher forcing: feed the target shifted right)."""

    def __init__(self, vocab_size, d_model, num_heads, d_ff, n_layers, eps=1e-5, dtype="float64", seed=0):
        rng = np.random.default_rng(seed)
        V, D = vocab_size, d_model
        self.params = {
            "src_embedding": rng.standard_normal((V, D)).astype(dtype),
            "tgt_embedding": rng.standard_normal((V, D)).astype(dtype),
            "out_weight": (rng.standard_normal((D, V)) / np.sqrt(D)).astype(dtype),
            "out_bias": np.zeros(V, dtype=dtype),
        }
        self.grads = {k: np.zeros_like(v) for k, v in self.params.items()}
        self.encoder = [EncoderLayer(D, num_heads, d_ff, eps, dtype, rng) for _ in range(n_layers)]
        self.decoder = [DecoderLayer(D, num_heads, d_ff, eps, dtype, rng) for _ in range(n_layers)]

    def _embed(self, table, ids):                               # ids (B, L) -> (B, L, D)
        pe = positional_encoding(ids.shape[1], table.shape[1]).astype(table.dtype)
        return table[ids] + pe

    def forward(self, src_ids, tgt_ids):
        p = self.params
        self.src_ids, self.tgt_ids = src_ids, tgt_ids
        memory = self._embed(p["src_embedding"], src_ids)      # (B, S, D)
        for layer in self.encoder:
            memory = layer.forward(memory)
        h = self._embed(p["tgt_embedding"], tgt_ids)           # (B, T, D)
        for layer in self.decoder:
            h = layer.forward(h, memory, None)
        self.h = h
        return h @ p["out_weight"] + p["out_bias"]              # (B, T, V)

    def backward(self, grad_logits):                           # grad_logits (B, T, V)
        p, gr = self.params, self.grads
        D, V = p["out_weight"].shape
        gr["out_weight"] = self.h.reshape(-1, D).T @ grad_logits.reshape(-1, V)
        gr["out_bias"] = grad_logits.reshape(-1, V).sum(axis=0)
        dh = grad_logits @ p["out_weight"].T
        dmemory = 0
        for layer in reversed(self.decoder):                   # every decoder layer reads the same memory
            dh, dm = layer.backward(dh)
            dmemory = dmemory + dm
        gr["tgt_embedding"] = np.zeros_like(p["tgt_embedding"])
        np.add.at(gr["tgt_embedding"], self.tgt_ids, dh)       # ids repeat: accumulate
        for layer in reversed(self.encoder):
            dmemory = layer.backward(dmemory)
        gr["src_embedding"] = np.zeros_like(p["src_embedding"])
        np.add.at(gr["src_embedding"], self.src_ids, dmemory)
        return None


@gradlab.register("seq2seq")
def build(cfg):
    return Seq2Seq(cfg.vocab_size, cfg.d_model, cfg.num_heads, cfg.d_ff, cfg.n_layers, eps=cfg.eps,
                   dtype=cfg.dtype, seed=cfg.seed)
