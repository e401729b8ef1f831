"""Article 000 §5's TransformerEncoderLayer, made to run (self.d_v set, d_ff passed,
layer_norm taking gamma and beta) and registered through a thin wrapper that loops over
the batch. It has no backward. Its attention reshapes Q to (T, n_heads, d_k) and
multiplies over the heads axis: the reference check names that."""
import numpy as np

import gradlab


def layer_norm(x, gamma, beta):
    mean = np.mean(x, axis=-1, keepdims=True)
    std = np.std(x, axis=-1, keepdims=True)
    return gamma * (x - mean) / (std + 1e-6) + beta


class TransformerEncoderLayer:
    def __init__(self, d_model, n_heads, d_ff):
        self.d_model = d_model
        self.n_heads = n_heads
        self.d_k = self.d_v = d_model // n_heads
        self.W_Q = np.random.randn(d_model, self.d_k * n_heads) * 0.01
        self.W_K = np.random.randn(d_model, self.d_k * n_heads) * 0.01
        self.W_V = np.random.randn(d_model, self.d_v * n_heads) * 0.01
        self.W_O = np.random.randn(d_model, d_model) * 0.01
        self.W1 = np.random.randn(d_model, d_ff) * 0.01
        self.b1 = np.zeros(d_ff)
        self.W2 = np.random.randn(d_ff, d_model) * 0.01
        self.b2 = np.zeros(d_model)
        self.gamma1 = np.ones(d_model)
        self.beta1 = np.zeros(d_model)
        self.gamma2 = np.ones(d_model)
        self.beta2 = np.zeros(d_model)

    def __call__(self, x):
        Q = np.dot(x, self.W_Q).reshape(-1, self.n_heads, self.d_k)
        K = np.dot(x, self.W_K).reshape(-1, self.n_heads, self.d_k)
        V = np.dot(x, self.W_V).reshape(-1, self.n_heads, self.d_v)
        attn = np.matmul(Q, K.transpose(0, 2, 1)) / np.sqrt(self.d_k)
        attn = np.exp(attn - np.max(attn, axis=-1, keepdims=True))
        attn = attn / np.sum(attn, axis=-1, keepdims=True)
        output = np.matmul(attn, V).reshape(-1, self.d_model)
        output = np.dot(output, self.W_O)
        output = layer_norm(output + x, self.gamma1, self.beta1)
        ffn = np.maximum(np.dot(output, self.W1) + self.b1, 0)
        ffn = np.dot(ffn, self.W2) + self.b2
        return layer_norm(ffn + output, self.gamma2, self.beta2)


class Batched(TransformerEncoderLayer):
    """The thin wrapper: forward over a batch, one sentence at a time (the weights keep the article's
    names, which are the reference's, so no param_map is needed)."""

    def forward(self, x):
        return np.stack([self(sentence) for sentence in x])


@gradlab.register("encoder_layer")
def build(cfg):
    return Batched(cfg.d_model, cfg.num_heads, cfg.d_ff)
