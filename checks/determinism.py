"""`determinism`: the same input gives the same output and the same gradients,
on a second call and on a second instance holding the same weights. Catches
random numbers drawn in forward (dropout left on, noise), state that carries
over between calls (running statistics, a cache that grows) and backward
adding into the gradients instead of setting them."""
import numpy as np

from gradlab.contract.errors import CheckFailure
from gradlab.contract.kinds import DIFFERENTIABLE, OPTIMIZER, PROBABILITIES
from gradlab.execution.harness import reading_grads_ahead
from gradlab.execution.subject import call_cross_entropy, call_softmax, copies
from gradlab.contract.suite import Outcome, check
from gradlab.contract.numbers import counted, distinct
from gradlab.numerics.repeatable import difference
from gradlab.numerics.tolerance import tolerance


def _run(subject, module, slots, inputs, g):
    """One forward and backward: {"output": ..., "dL/dx": ..., "gradient of 'w'": ...}, copied."""
    out = subject.forward(module, *copies(inputs)).copy()   # copies: mutating inputs is input_mutation's business
    result = {"output": out}
    if subject.no_backward:
        return result                                  # a forward-only module: its output is all there is
    with reading_grads_ahead(slots, module):     # read below: through a worker, in backward's request
        dxs = subject.backward(module, g.copy())
    for spec, dx in zip(subject.kind.grad_inputs(), dxs):
        result[f"dL/d{spec.name} (backward's return)"] = dx.copy()
    grads = subject.read_grads(slots)
    result.update({f"gradient of {name!r}": value for name, value in grads.items()})
    return result


@check("determinism", any_of={DIFFERENTIABLE, PROBABILITIES, OPTIMIZER}, order=30,
       summary="the same input gives the same output and the same gradients, twice")
def determinism(subject, rng):
    kind, cfg = subject.kind, subject.cfg
    tol = tolerance("repeat", cfg.np_dtype)   # identical code on the same input gives identical bits
    if kind.form == "optimizer":
        return _optimizer(subject, rng, tol)
    if kind.form == "function":
        runs = _function_runs(subject, rng)
        labels = ["the first call", "the second call"]
    else:
        module, slots = subject.fresh(rng)
        x = subject.make_inputs(rng)
        g = rng.standard_normal(kind.output_shape(cfg)).astype(cfg.np_dtype)
        first = _run(subject, module, slots, x, g)
        second = _run(subject, module, slots, x, g)
        # a second instance with the same weights: only the parameters should matter
        other, other_slots = subject.fresh(rng)
        by_name = {s.name: s for s in other_slots}
        for s in slots:
            if s.name in by_name and by_name[s.name].value.shape == s.value.shape:
                by_name[s.name].value[...] = s.value
        third = _run(subject, other, other_slots, x, g)
        runs = [first, second, third]
        labels = ["the first call", "a second call on the same module", "a second instance with the same weights"]
    compared = 0
    for label, run in zip(labels[1:], runs[1:]):
        for name, value in runs[0].items():
            if name not in run:
                continue
            compared += 1
            found = difference(runs[0][name], run[name], tol)
            if found:
                index, a, b, worst = found
                ta, tb = distinct(a, b)
                raise CheckFailure(
                    f"{kind.name}: {name} differs between {labels[0]} and {label} on the same input: at index "
                    f"{index}: {ta} then {tb} (max difference {worst:.3g}). {_hint(name)}",
                    {"max_difference": worst, "tensor": name})
    return Outcome(f"{counted(len(runs[0]), 'tensor')} identical across {len(runs)} runs on the same input",
                   {"compared": compared})


def _hint(name):
    if name.startswith(("gradient", "dL/dx", "grad_logits")):
        return ("Does backward add into the gradients (grads[name] += ...) instead of setting them "
                "(grads[name] = ...), draw random numbers, or use a value cached from an earlier call?")
    return ("Does it draw random numbers (dropout left on, np.random without a fixed seed) or keep state "
            "that changes from call to call (running statistics, a growing cache)?")


def _function_runs(subject, rng):
    kind, cfg = subject.kind, subject.cfg
    x = rng.standard_normal(kind.input_shape(cfg)).astype(cfg.np_dtype)
    if kind.has(PROBABILITIES):
        return [{"output": call_softmax(subject, x.copy()).copy()} for _ in range(2)]
    targets = rng.integers(0, cfg.vocab_size, size=x.shape[:-1])
    runs = []
    for _ in range(2):
        loss, grad = call_cross_entropy(subject, x.copy(), targets.copy())
        runs.append({"loss": np.asarray(loss), "grad_logits": grad.copy()})
    return runs


def _optimizer(subject, rng, tol):
    """Two optimizers built alike, fed the same steps, must move the parameters alike."""
    shapes = [(3, 4), (5,)]
    params0 = {f"p{i}": rng.standard_normal(s) for i, s in enumerate(shapes)}
    steps = [{k: rng.standard_normal(v.shape) for k, v in params0.items()} for _ in range(3)]
    finals = []
    for _ in range(2):
        optimizer = subject.build()
        params = {k: v.copy() for k, v in params0.items()}
        for grads in steps:
            subject.step(optimizer, params, {k: v.copy() for k, v in grads.items()})
        finals.append(params)
    for name in params0:
        found = difference(finals[0][name], finals[1][name], tol)
        if found:
            index, a, b, worst = found
            ta, tb = distinct(a, b)
            raise CheckFailure(
                f"{subject.kind.name}: two optimizers built the same way and given the same 3 steps left "
                f"parameter {name!r} different at index {index}: {ta} vs {tb}. Does step draw random "
                "numbers, or share state between instances (a class-level dict or counter)?",
                {"max_difference": worst})
    return Outcome("two optimizers given the same steps give identical parameters")
