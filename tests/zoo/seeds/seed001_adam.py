"""Article 001's Adam and AdamW: step() verbatim; the state the article assumes
("假设 self.m[name]、self.v[name] 已是与参数同形状的零数组") is created by the student
(STUDENT lines)."""
import numpy as np

import gradlab


class _ZerosLike(dict):                                                          # STUDENT
    """m[name] starts as zeros shaped like the parameter, as the article assumes."""

    def __init__(self, params):
        super().__init__()
        self.params = params

    def __missing__(self, name):
        self[name] = np.zeros_like(self.params[name])
        return self[name]


class Adam:
    def __init__(self, learning_rate, beta1=0.9, beta2=0.999, eps=1e-8, weight_decay=0.0):   # STUDENT
        self.learning_rate, self.beta1, self.beta2, self.eps = learning_rate, beta1, beta2, eps
        self.weight_decay, self.t, self.m, self.v = weight_decay, 0, None, None

    def _state(self, params):                                                    # STUDENT
        if self.m is None:
            self.m, self.v = _ZerosLike(params), _ZerosLike(params)
        self.m.params = self.v.params = params

    def step(self, params: dict, grads: dict):
        self._state(params)                                                      # STUDENT
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
        self._state(params)                                                      # STUDENT
        self.t += 1
        for name, param in params.items():
            grad = grads[name]
            self.m[name] = self.beta1 * self.m[name] + (1 - self.beta1) * grad
            self.v[name] = self.beta2 * self.v[name] + (1 - self.beta2) * grad**2
            m_hat = self.m[name] / (1 - self.beta1 ** self.t)
            v_hat = self.v[name] / (1 - self.beta2 ** self.t)

            param *= 1 - self.learning_rate * self.weight_decay
            param -= self.learning_rate * m_hat / (np.sqrt(v_hat) + self.eps)


@gradlab.register("adam")
def build_adam(cfg):
    return Adam(cfg.lr, cfg.beta1, cfg.beta2, cfg.eps)


@gradlab.register("adamw")
def build_adamw(cfg):
    return AdamW(cfg.lr, cfg.beta1, cfg.beta2, cfg.eps, cfg.weight_decay)
