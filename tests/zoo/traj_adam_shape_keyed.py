"""Broken: m and v kept in dicts keyed by the parameter's shape: w1 and w2, both (4, 3), share them."""
import numpy as np

import gradlab
import traj_parts as tp


class ByShape(tp.Adam):
    def step(self, params, grads):
        self.t += 1
        for name, p in params.items():
            key, g = p.shape, grads[name]
            self.m[key] = self.b1 * self.m.get(key, 0) + (1 - self.b1) * g
            self.v[key] = self.b2 * self.v.get(key, 0) + (1 - self.b2) * g ** 2
            m, v = self.m[key] / (1 - self.b1 ** self.t), self.v[key] / (1 - self.b2 ** self.t)
            p -= self.lr * m / (np.sqrt(v) + self.eps)


@gradlab.register("adam")
def build(cfg):
    return ByShape(cfg)
