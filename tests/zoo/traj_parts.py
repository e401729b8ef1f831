"""A student's optimizers and clipping, written only against CONTRACT.md.
The keyword switches reproduce mistakes students make; all off is correct.
Registers nothing itself; the traj_*.py files next to it build on it."""
import math

import numpy as np


class Adam:
    def __init__(self, cfg, decoupled=False, t_in_loop=False, bias_correction=True, eps_inside=False,
                 decay_after=False, coupled=False):
        self.lr, self.b1, self.b2, self.eps, self.wd = cfg.lr, cfg.beta1, cfg.beta2, cfg.eps, cfg.weight_decay
        self.decoupled, self.t_in_loop, self.bias_correction = decoupled, t_in_loop, bias_correction
        self.eps_inside, self.decay_after, self.coupled = eps_inside, decay_after, coupled
        self.m, self.v, self.t = {}, {}, 0

    def step(self, params, grads):
        if not self.t_in_loop:
            self.t += 1
        for name in params:
            if self.t_in_loop:
                self.t += 1
            p, g = params[name], grads[name]
            if self.wd and (self.coupled or not self.decoupled):
                g = g + self.wd * p
            elif self.wd and not self.decay_after:
                p *= 1 - self.lr * self.wd
            if name not in self.m:
                self.m[name], self.v[name] = np.zeros_like(p), np.zeros_like(p)
            self.m[name] = self.b1 * self.m[name] + (1 - self.b1) * g
            self.v[name] = self.b2 * self.v[name] + (1 - self.b2) * g ** 2
            m, v = self.m[name], self.v[name]
            if self.bias_correction:
                m, v = m / (1 - self.b1 ** self.t), v / (1 - self.b2 ** self.t)
            if self.eps_inside:
                p -= self.lr * m / np.sqrt(v + self.eps)
            else:
                p -= self.lr * m / (np.sqrt(v) + self.eps)
            if self.wd and self.decoupled and self.decay_after and not self.coupled:
                p *= 1 - self.lr * self.wd


class SGD:
    def __init__(self, cfg, shared_buffer=False, no_momentum=False):
        self.lr, self.mu, self.wd = cfg.lr, cfg.momentum, cfg.weight_decay
        self.shared, self.no_momentum = shared_buffer, no_momentum
        self.velocity = None if shared_buffer else {}

    def step(self, params, grads):
        for name, p in params.items():
            g = grads[name] + self.wd * p          # L2 weight decay, as torch.optim.SGD
            if self.no_momentum:
                p -= self.lr * g
            elif self.shared:
                self.velocity = g if self.velocity is None else self.mu * self.velocity + g
                p -= self.lr * self.velocity
            else:
                self.velocity[name] = g if name not in self.velocity else self.mu * self.velocity[name] + g
                p -= self.lr * self.velocity[name]


def clip_grad_norm(grads, max_norm, rebind=False, return_after=False, per_tensor=False):
    if per_tensor:
        for g in grads:
            n = np.sqrt((g ** 2).sum())
            if n > max_norm:
                g *= max_norm / (n + 1e-6)
        return math.sqrt(sum((g ** 2).sum() for g in grads))
    total = math.sqrt(sum(float((g ** 2).sum()) for g in grads))
    scale = max_norm / (total + 1e-6)
    if scale < 1:
        if rebind:
            grads = [g * scale for g in grads]
        else:
            for g in grads:
                g *= scale
        if return_after:
            return math.sqrt(sum(float((g ** 2).sum()) for g in grads))
    return total
