"""Article 001's LayerNorm and FeedForward exactly as printed: forward only (the
article shows no backward for them), with the constructor a student adds (STUDENT).
Forward-only modules: every forward check judges them; the gradient checks skip."""
import numpy as np

import gradlab


class LayerNorm:
    def __init__(self, d_model, eps=1e-5):                                     # STUDENT
        self.gamma, self.beta, self.eps = np.ones(d_model), np.zeros(d_model), eps

    def forward(self, x: np.ndarray) -> np.ndarray:
        mean = x.mean(axis=-1, keepdims=True)
        var = x.var(axis=-1, keepdims=True)
        x_norm = (x - mean) / np.sqrt(var + self.eps)
        return self.gamma * x_norm + self.beta


class FeedForward:
    def __init__(self, d_model, d_ff, seed=0):                                  # STUDENT
        rng = np.random.default_rng(seed)
        self.w1 = rng.standard_normal((d_model, d_ff)) * np.sqrt(2.0 / (d_model + d_ff))
        self.b1 = np.zeros(d_ff)
        self.w2 = rng.standard_normal((d_ff, d_model)) * np.sqrt(2.0 / (d_model + d_ff))
        self.b2 = np.zeros(d_model)

    def forward(self, x: np.ndarray) -> np.ndarray:
        hidden = x @ self.w1 + self.b1
        hidden = self.gelu(hidden)
        return hidden @ self.w2 + self.b2

    @staticmethod
    def gelu(x: np.ndarray) -> np.ndarray:
        # GELU 的常见 tanh 近似
        return 0.5 * x * (1.0 + np.tanh(
            np.sqrt(2.0 / np.pi) * (x + 0.044715 * x**3)
        ))


@gradlab.register("layernorm")
def build_ln(cfg):
    return LayerNorm(cfg.d_model, cfg.eps)


@gradlab.register("ffn")
def build_ffn(cfg):
    return FeedForward(cfg.d_model, cfg.d_ff, cfg.seed)
