"""Correct, but its first forward starts a non-daemon thread that never ends (in
gradlab's own process, gradlab could not exit after printing its summary)."""
import threading
import time

import gradlab
from _layernorm import LayerNorm

started = []


def forever():
    while True:
        time.sleep(0.05)


class Spawns(LayerNorm):
    def forward(self, x):
        if not started:
            started.append(threading.Thread(target=forever))
            started[0].start()
        return super().forward(x)


@gradlab.register("layernorm")
def build(cfg):
    return Spawns(cfg.d_model, cfg.eps)
