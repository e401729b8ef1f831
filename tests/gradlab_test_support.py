"""What several test files share: reading the process tree from /proc (nothing left running), a strict JSON
reader (as JavaScript's JSON.parse), and an optimizer that writes NaN/inf into its parameters."""
import json
import os


def descendants(pid):
    """Every process below `pid` (children, their children, ...), read from /proc."""
    children = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                with open(f"/proc/{entry}/stat") as fh:
                    ppid = int(fh.read().rsplit(")", 1)[1].split()[1])
            except (OSError, ValueError, IndexError):
                continue
            children.setdefault(ppid, []).append(int(entry))
    out, todo = [], [pid]
    while todo:
        for child in children.get(todo.pop(), []):
            out.append(child)
            todo.append(child)
    return out


def state(pid):
    """A process's state letter ("R", "S", "Z", ...), or None once it is gone."""
    try:
        with open(f"/proc/{pid}/stat") as fh:
            return fh.read().rsplit(")", 1)[1].split()[0]
    except OSError:
        return None


def strict_json(text):
    """json.loads as JavaScript's JSON.parse reads: a bare NaN or Infinity is an error."""
    def refuse(token):
        raise ValueError(f"not JSON: {token}")
    return json.loads(text, parse_constant=refuse)


def nan_adam(value="np.nan"):
    """An Adam that writes `value` into every parameter from its third step."""
    return f"""\
import numpy as np
import gradlab

class Adam:
    def __init__(self, lr):
        self.lr, self.t = lr, 0
    def step(self, params, grads):
        self.t += 1
        for name, p in params.items():
            p[...] = {value} if self.t >= 3 else p - self.lr * grads[name]

@gradlab.register("adam")
def build(cfg):
    return Adam(cfg.lr)
"""
