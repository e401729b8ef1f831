"""Several of a student's modules in one file, each registered for its kind
(CONTRACT §1: one file may register several kinds). They use different ways
of exposing parameters (CONTRACT §2), all of which gradlab finds:

- LayerNorm: parameters() returns a dict, gradients() returns the gradients;
- FeedForward: attribute pairs w1 / grad_w1, b1 / grad_b1, ...;
- Linear: attribute pairs weight / weight_grad;
- Embedding: params / grads dicts;
- cross_entropy, softmax: plain functions; Adam: an object with step(params, grads).

Run it:
    gradlab check all --impl examples/student_modules.py
    gradlab check layernorm --impl examples/student_modules.py --dtype float32
"""
import numpy as np

import gradlab


class LayerNorm:
    def __init__(self, dim, eps):
        self.eps = eps
        self.gamma = np.ones(dim)
        self.beta = np.zeros(dim)
        self._grads = {}

    def parameters(self):
        return {"gamma": self.gamma, "beta": self.beta}

    def gradients(self):
        return self._grads

    def forward(self, x):
        self.mu = x.mean(-1, keepdims=True)
        self.var = ((x - self.mu) ** 2).mean(-1, keepdims=True)
        self.xhat = (x - self.mu) / np.sqrt(self.var + self.eps)
        return self.gamma * self.xhat + self.beta

    def backward(self, dy):
        D = dy.shape[-1]
        self._grads["gamma"] = (dy * self.xhat).reshape(-1, D).sum(0)
        self._grads["beta"] = dy.reshape(-1, D).sum(0)
        dxhat = dy * self.gamma
        inv = 1 / np.sqrt(self.var + self.eps)
        return inv / D * (D * dxhat - dxhat.sum(-1, keepdims=True)
                          - self.xhat * (dxhat * self.xhat).sum(-1, keepdims=True))


class FeedForward:
    """GELU (tanh approximation), as the contract asks."""

    def __init__(self, d_model, d_ff, rng):
        self.w1 = rng.normal(0, d_model ** -0.5, (d_model, d_ff))
        self.b1 = np.zeros(d_ff)
        self.w2 = rng.normal(0, d_ff ** -0.5, (d_ff, d_model))
        self.b2 = np.zeros(d_model)

    def forward(self, x):
        self.x = x
        self.h = x @ self.w1 + self.b1
        c = np.sqrt(2 / np.pi)
        self.th = np.tanh(c * (self.h + 0.044715 * self.h ** 3))
        self.a = 0.5 * self.h * (1 + self.th)
        return self.a @ self.w2 + self.b2

    def backward(self, dy):
        D, F = self.w1.shape
        self.grad_w2 = np.einsum("btf,btd->fd", self.a, dy)
        self.grad_b2 = dy.reshape(-1, D).sum(0)
        da = dy @ self.w2.T
        c = np.sqrt(2 / np.pi)
        h, th = self.h, self.th
        dh = da * (0.5 * (1 + th) + 0.5 * h * (1 - th ** 2) * c * (1 + 3 * 0.044715 * h ** 2))
        self.grad_w1 = np.einsum("btd,btf->df", self.x, dh)
        self.grad_b1 = dh.reshape(-1, F).sum(0)
        return dh @ self.w1.T


class Linear:
    def __init__(self, d_in, d_out, rng):
        self.weight = rng.normal(0, d_in ** -0.5, (d_in, d_out))
        self.bias = np.zeros(d_out)

    def forward(self, x):
        self.x = x
        return x @ self.weight + self.bias

    def backward(self, dy):
        self.weight_grad = self.x.reshape(-1, self.x.shape[-1]).T @ dy.reshape(-1, dy.shape[-1])
        self.bias_grad = dy.reshape(-1, dy.shape[-1]).sum(0)
        return dy @ self.weight.T


class Embedding:
    def __init__(self, vocab, dim, rng):
        self.params = {"weight": rng.normal(0, 1, (vocab, dim))}
        self.grads = {"weight": np.zeros((vocab, dim))}

    def forward(self, ids):
        self.ids = ids
        return self.params["weight"][ids]

    def backward(self, dy):
        self.grads["weight"] = np.zeros_like(self.params["weight"])
        np.add.at(self.grads["weight"], self.ids, dy)


def softmax(x, axis=-1):
    e = np.exp(x - x.max(axis=axis, keepdims=True))
    return e / e.sum(axis=axis, keepdims=True)


def cross_entropy(logits, targets, ignore_index=None):
    B, T, V = logits.shape
    z = logits.reshape(-1, V)
    t = targets.reshape(-1)
    keep = np.ones(len(t), bool) if ignore_index is None else t != ignore_index
    n = max(int(keep.sum()), 1)
    shifted = z - z.max(axis=-1, keepdims=True)              # log-sum-exp: no overflow, no log(0)
    log_p = shifted - np.log(np.exp(shifted).sum(axis=-1, keepdims=True))
    rows = np.arange(len(t))[keep]
    loss = -log_p[rows, t[keep]].sum() / n
    grad = np.exp(log_p)
    grad[rows, t[keep]] -= 1
    grad[~keep] = 0
    return loss, (grad / n).reshape(B, T, V)


class Adam:
    def __init__(self, lr, beta1, beta2, eps, weight_decay=0.0):
        self.lr, self.b1, self.b2, self.eps, self.wd = lr, beta1, beta2, eps, weight_decay
        self.m, self.v, self.t = {}, {}, 0

    def step(self, params, grads):
        self.t += 1
        for k, p in params.items():
            g = grads[k] + self.wd * p          # torch.optim.Adam's weight decay: L2, added to the gradient
            self.m[k] = self.b1 * self.m.get(k, 0) + (1 - self.b1) * g
            self.v[k] = self.b2 * self.v.get(k, 0) + (1 - self.b2) * g * g
            m_hat = self.m[k] / (1 - self.b1 ** self.t)
            v_hat = self.v[k] / (1 - self.b2 ** self.t)
            p -= self.lr * m_hat / (np.sqrt(v_hat) + self.eps)


@gradlab.register("layernorm")
def build_layernorm(cfg):
    return LayerNorm(cfg.d_model, cfg.eps)


@gradlab.register("ffn")
def build_ffn(cfg):
    return FeedForward(cfg.d_model, cfg.d_ff, np.random.default_rng(cfg.seed))


@gradlab.register("linear")
def build_linear(cfg):
    return Linear(cfg.d_model, cfg.d_ff, np.random.default_rng(cfg.seed))


@gradlab.register("embedding")
def build_embedding(cfg):
    return Embedding(cfg.vocab_size, cfg.d_model, np.random.default_rng(cfg.seed))


@gradlab.register("adam")
def build_adam(cfg):
    return Adam(cfg.lr, cfg.beta1, cfg.beta2, cfg.eps, cfg.weight_decay)


gradlab.register("softmax")(softmax)
gradlab.register("cross_entropy")(cross_entropy)
