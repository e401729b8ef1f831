"""Correct: Adam whose moment buffers are float32 (half the memory) whatever the parameters are; the
update, computed from them, is float32 and is subtracted from the caller's float64 parameters in
float64 (CONTRACT §6: judged as float32). A per-name state dict with its own step count, as PyTorch keeps."""
import numpy as np

import gradlab


class Adam:
    def __init__(self, cfg):
        self.cfg = cfg
        self.state = {}

    def step(self, params, grads):
        c = self.cfg
        for name, p in params.items():
            s = self.state.setdefault(name, {"step": 0, "exp_avg": np.zeros(p.shape, np.float32),
                                             "exp_avg_sq": np.zeros(p.shape, np.float32)})
            s["step"] += 1
            g = grads[name] + c.weight_decay * p if c.weight_decay else grads[name]
            s["exp_avg"] *= c.beta1
            s["exp_avg"] += (1 - c.beta1) * g
            s["exp_avg_sq"] *= c.beta2
            s["exp_avg_sq"] += (1 - c.beta2) * g * g
            p -= self.update(s, c)

    @staticmethod
    def update(s, c):
        m_hat = s["exp_avg"] / (1 - c.beta1 ** s["step"])
        v_hat = s["exp_avg_sq"] / (1 - c.beta2 ** s["step"])
        return c.lr * m_hat / (np.sqrt(v_hat) + c.eps)


@gradlab.register("adam")
def build(cfg):
    return Adam(cfg)
