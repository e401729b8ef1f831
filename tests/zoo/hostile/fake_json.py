"""A wrong gamma gradient, and a forged passing result written where results go:
result.json in the working folder and the --json path read off gradlab's command line."""
import json
import os

import gradlab
from _layernorm import LayerNorm

FAKE = {"passed": True, "kind": "layernorm", "checks": []}


def forge():
    targets = ["result.json"]
    try:
        with open(f"/proc/{os.getppid()}/cmdline", "rb") as fh:
            words = fh.read().decode().split("\0")
        if "--json" in words:
            targets.append(words[words.index("--json") + 1])
    except OSError:
        pass
    for path in targets:
        try:
            with open(path, "w") as fh:
                json.dump(FAKE, fh)
        except OSError:
            pass


forge()


class Wrong(LayerNorm):
    def backward(self, g):
        forge()
        dx = super().backward(g)
        self.grads["gamma"] = self.grads["gamma"] * 2
        return dx


@gradlab.register("layernorm")
def build(cfg):
    return Wrong(cfg.d_model, cfg.eps)
