"""Correct, but forward forks a child that sleeps for an hour (its pid goes to pids.txt beside this file)."""
import os
import time

import gradlab
from _layernorm import LayerNorm

PIDS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "pids.txt")


class Forks(LayerNorm):
    def forward(self, x):
        if not getattr(self, "forked", False):
            self.forked = True
            pid = os.fork()
            if pid == 0:
                time.sleep(3600)
                os._exit(0)
            with open(PIDS, "a") as fh:
                fh.write(f"{pid}\n")
        return super().forward(x)


@gradlab.register("layernorm")
def build(cfg):
    return Forks(cfg.d_model, cfg.eps)
