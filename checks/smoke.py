"""The precondition: the module builds and its calls return usable values.
When it fails the other checks are skipped, so their messages are not noise."""
import numpy as np

from gradlab.contract.errors import CheckFailure
from gradlab.contract.kinds import LOSS, PROBABILITIES, TRAJECTORY
from gradlab.execution.subject import call_cross_entropy, call_scalar, call_softmax
from gradlab.contract.suite import Outcome, check


@check("smoke", order=0, summary="the module builds, and forward/backward (or the function) return arrays of the right shape")
def smoke(subject, rng):
    kind, cfg = subject.kind, subject.cfg
    if kind.form == "module":
        module, slots = subject.fresh(rng, randomize=False)
        expected = kind.param_shapes(cfg)
        if expected and not slots:
            raise CheckFailure(
                f"{kind.name}: found no parameters with gradients. gradlab looks for module.params and "
                "module.grads dicts, module.parameters(), or attribute pairs such as weight/dweight "
                "(CONTRACT §2); make backward fill one of them")
        return Outcome(f"builds; forward and backward run; {len(slots)} parameters found",
                       {"parameters": len(slots)})
    if kind.form == "optimizer":
        optimizer = subject.build()
        params = {"w": rng.standard_normal((3, 4))}
        before = params["w"].copy()
        subject.step(optimizer, params, {"w": rng.standard_normal((3, 4))})
        if np.array_equal(before, params["w"]):
            raise CheckFailure(f"{kind.name}: step(params, grads) left params unchanged; it must update "
                               "the arrays in place (param -= ..., not param = param - ...)")
        return Outcome("builds; step updates parameters in place")
    if kind.has(PROBABILITIES):
        call_softmax(subject, rng.standard_normal(kind.input_shape(cfg)))
    elif kind.has(LOSS):
        logits = rng.standard_normal(kind.input_shape(cfg))
        targets = rng.integers(0, cfg.vocab_size, size=logits.shape[:-1])
        call_cross_entropy(subject, logits, targets)
    elif kind.has(TRAJECTORY) and kind.name == "schedule":
        call_scalar(subject, "schedule(1, d_model, warmup_steps)", 1, cfg.d_model, cfg.warmup_steps)
    else:
        call_scalar(subject, "clip_grad_norm(grads, max_norm)", [rng.standard_normal(3)], cfg.max_norm)
    return Outcome("runs and returns values of the right type and shape")
