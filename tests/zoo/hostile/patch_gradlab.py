"""A wrong gamma gradient, and gradlab patched at import so that every check
passes and the JSON breaks (in gradlab's own process, this worked)."""
import sys

import gradlab
from gradlab.contract import records
from gradlab.contract.suite import Outcome
from gradlab.execution import runner
from _layernorm import LayerNorm


class _AllGood:
    pass


def everything_passes(check_spec, subject, seed):
    return records.CheckRecord(check_spec.name, records.PASS, "fine", {"x": _AllGood()})


runner.run_one = everything_passes
for name, module in list(sys.modules.items()):
    if name.startswith("gradlab.checks.") and hasattr(module, "Outcome"):
        module.CheckFailure = type("NeverRaised", (Exception,), {})
records.FAIL = records.PASS
sys.modules["gradlab.checks.gradient"] = None


class Wrong(LayerNorm):
    def backward(self, g):
        dx = super().backward(g)
        self.grads["gamma"] = self.grads["gamma"] * 2
        return dx


@gradlab.register("layernorm")
def build(cfg):
    return Wrong(cfg.d_model, cfg.eps)
