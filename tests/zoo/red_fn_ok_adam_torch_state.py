"""Correct: a torch.optim-like Adam: a list of param groups, state keyed by
id(param), each parameter's own state['step'] (one per parameter, incremented
once per step() call, as torch does), coupled weight decay, np.sqrt(out=...)."""
import numpy as np

import gradlab


class Adam:
    def __init__(self, lr, betas=(0.9, 0.999), eps=1e-8, weight_decay=0.0):
        self.defaults = dict(lr=lr, betas=betas, eps=eps, weight_decay=weight_decay)
        self.state = {}

    def step(self, params, grads):
        lr, (beta1, beta2), eps, wd = (self.defaults[k] for k in ("lr", "betas", "eps", "weight_decay"))
        for name in params:
            p, grad = params[name], grads[name]
            if wd != 0:
                grad = grad + wd * p
            state = self.state.get(id(p))
            if state is None:
                state = self.state[id(p)] = {"step": 0, "exp_avg": np.zeros_like(p),
                                             "exp_avg_sq": np.zeros_like(p)}
            state["step"] += 1
            exp_avg, exp_avg_sq = state["exp_avg"], state["exp_avg_sq"]
            exp_avg *= beta1
            exp_avg += (1 - beta1) * grad
            exp_avg_sq *= beta2
            exp_avg_sq += (1 - beta2) * grad * grad
            bias_correction1 = 1 - beta1 ** state["step"]
            bias_correction2 = 1 - beta2 ** state["step"]
            denom = np.sqrt(exp_avg_sq) / np.sqrt(bias_correction2)
            denom += eps
            step_size = lr / bias_correction1
            p -= step_size * exp_avg / denom


@gradlab.register("adam")
def build(cfg):
    return Adam(cfg.lr, (cfg.beta1, cfg.beta2), cfg.eps, cfg.weight_decay)
