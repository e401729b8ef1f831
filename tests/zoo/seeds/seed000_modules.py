"""Article 000's building blocks, as a student copies them, each wrapped in the
thinnest class the contract asks for (a forward(x); no backward: the article has
none). `positional_encoding`, `layer_norm` and the ReLU FFN are the article's own
lines; the wrappers are marked STUDENT."""
import numpy as np

import gradlab


def positional_encoding(max_len, d_model):
    pe = np.zeros((max_len, d_model))
    position = np.arange(0, max_len).reshape(-1, 1)
    div_term = np.exp(np.arange(0, d_model, 2) * -(np.log(10000.0) / d_model))
    pe[:, 0::2] = np.sin(position * div_term)
    pe[:, 1::2] = np.cos(position * div_term)
    return pe


def layer_norm(x):
    mean = np.mean(x, axis=-1, keepdims=True)
    std = np.std(x, axis=-1, keepdims=True)
    gamma = np.ones(x.shape[-1])  # 可训练参数
    beta = np.zeros(x.shape[-1])  # 可训练参数
    return gamma * (x - mean) / (std + 1e-6) + beta


class SinusoidalPE:                                                             # STUDENT
    def __init__(self, max_len, d_model):
        self.pe = positional_encoding(max_len, d_model)

    def forward(self, x):
        return x + self.pe[:x.shape[1]]

    def backward(self, grad):
        return grad


class LayerNormFn:                                                              # STUDENT
    def forward(self, x):
        return layer_norm(x)


class FFN:
    def __init__(self, d_model, d_ff):
        self.W1 = np.random.randn(d_model, d_ff) * 0.01
        self.b1 = np.zeros(d_ff)
        self.W2 = np.random.randn(d_ff, d_model) * 0.01
        self.b2 = np.zeros(d_model)

    def forward(self, output):                                                  # STUDENT: the lines, in a method
        # 第一层带ReLU激活
        hidden = np.maximum(np.dot(output, self.W1) + self.b1, 0)
        # 第二层线性变换
        ffn_output = np.dot(hidden, self.W2) + self.b2
        return ffn_output


class WarmupScheduler:
    def __init__(self, d_model, warmup_steps=4000):
        self.d_model = d_model
        self.warmup_steps = warmup_steps
        self.current_step = 0

    def __call__(self):
        self.current_step += 1
        return (self.d_model ** -0.5) * min(
            self.current_step ** -0.5,
            self.current_step * self.warmup_steps ** -1.5
        )


def schedule(step, d_model, warmup_steps):                                      # STUDENT
    scheduler = WarmupScheduler(d_model, warmup_steps)
    for _ in range(step):
        lr = scheduler()
    return lr


@gradlab.register("positional")
def build_pe(cfg):
    return SinusoidalPE(cfg.max_len, cfg.d_model)


@gradlab.register("layernorm")
def build_ln(cfg):
    return LayerNormFn()


@gradlab.register("ffn", param_map={"W1": "w1", "b1": "b1", "W2": "w2", "b2": "b2"})
def build_ffn(cfg):
    return FFN(cfg.d_model, cfg.d_ff)


gradlab.register("schedule")(schedule)
