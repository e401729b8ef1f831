"""Correct, but forward starts a daemon the classic way: fork, setsid, fork again,
the middle process exits (the grandchild is an orphan in a session of its own)."""
import os
import time

import gradlab
from _layernorm import LayerNorm

PIDS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "pids.txt")


class Daemonizes(LayerNorm):
    def forward(self, x):
        if not getattr(self, "forked", False):
            self.forked = True
            if os.fork() == 0:
                os.setsid()
                if os.fork() == 0:
                    with open(PIDS, "a") as fh:
                        fh.write(f"{os.getpid()}\n")
                    time.sleep(3600)
                os._exit(0)
            time.sleep(0.2)      # let the grandchild write its pid
        return super().forward(x)


@gradlab.register("layernorm")
def build(cfg):
    return Daemonizes(cfg.d_model, cfg.eps)
