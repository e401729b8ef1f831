"""Correct: the seed article's teaching code (stable_softmax, clip_grad_norm,
cross_entropy_with_grad with an ignore_index added, Adam/AdamW with m/v dicts),
as a student would copy it into one file."""
import numpy as np

import gradlab


def stable_softmax(x, axis=-1):
    shifted = x - np.max(x, axis=axis, keepdims=True)
    exp_x = np.exp(shifted)
    return exp_x / np.sum(exp_x, axis=axis, keepdims=True)


def clip_grad_norm(gradients, max_norm=1.0):
    total_norm = np.sqrt(sum(np.sum(g**2) for g in gradients))
    clip_coef = max_norm / (total_norm + 1e-6)
    if clip_coef < 1:
        for g in gradients:
            g *= clip_coef
    return total_norm


def cross_entropy_with_grad(logits, targets, ignore_index=None):
    batch_size, seq_len, vocab_size = logits.shape
    flat = logits.reshape(-1, vocab_size)
    labels = targets.reshape(-1)
    valid = np.ones(labels.shape, dtype=bool) if ignore_index is None else labels != ignore_index
    safe = np.where(valid, labels, 0)
    rows = np.arange(labels.size)

    shifted = flat - flat.max(axis=-1, keepdims=True)
    exp_logits = np.exp(shifted)
    normalizer = exp_logits.sum(axis=-1, keepdims=True)
    log_probs = shifted - np.log(normalizer)
    count = max(valid.sum(), 1)
    loss = -(log_probs[rows, safe] * valid).sum() / count

    grad = exp_logits / normalizer
    grad[rows, safe] -= 1
    grad *= valid[:, None]
    grad /= count
    return loss, grad.reshape(batch_size, seq_len, vocab_size)


class Adam:
    def __init__(self, learning_rate=1e-3, beta1=0.9, beta2=0.999, eps=1e-8, weight_decay=0.0):
        self.learning_rate, self.beta1, self.beta2, self.eps = learning_rate, beta1, beta2, eps
        self.weight_decay = weight_decay
        self.t = 0
        self.m, self.v = {}, {}

    def _init(self, params):
        for name, param in params.items():
            if name not in self.m:
                self.m[name] = np.zeros_like(param)
                self.v[name] = np.zeros_like(param)

    def step(self, params: dict, grads: dict):
        self._init(params)
        self.t += 1
        for name, param in params.items():
            grad = grads[name]
            self.m[name] = self.beta1 * self.m[name] + (1 - self.beta1) * grad
            self.v[name] = self.beta2 * self.v[name] + (1 - self.beta2) * grad**2

            m_hat = self.m[name] / (1 - self.beta1 ** self.t)
            v_hat = self.v[name] / (1 - self.beta2 ** self.t)
            param -= self.learning_rate * m_hat / (np.sqrt(v_hat) + self.eps)


class AdamW(Adam):
    def step(self, params: dict, grads: dict):
        self._init(params)
        self.t += 1
        for name, param in params.items():
            grad = grads[name]
            self.m[name] = self.beta1 * self.m[name] + (1 - self.beta1) * grad
            self.v[name] = self.beta2 * self.v[name] + (1 - self.beta2) * grad**2
            m_hat = self.m[name] / (1 - self.beta1 ** self.t)
            v_hat = self.v[name] / (1 - self.beta2 ** self.t)

            param *= 1 - self.learning_rate * self.weight_decay
            param -= self.learning_rate * m_hat / (np.sqrt(v_hat) + self.eps)


gradlab.register("softmax")(stable_softmax)
gradlab.register("clip_grad_norm")(clip_grad_norm)
gradlab.register("cross_entropy")(cross_entropy_with_grad)


@gradlab.register("adam")
def build_adam(cfg):
    return Adam(cfg.lr, cfg.beta1, cfg.beta2, cfg.eps)


@gradlab.register("adamw")
def build_adamw(cfg):
    return AdamW(cfg.lr, cfg.beta1, cfg.beta2, cfg.eps, cfg.weight_decay)
