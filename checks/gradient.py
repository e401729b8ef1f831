"""`gradient`: the student's backward against finite differences of the
scalarised objective f = sum(forward(x) * g) (for a loss function: the loss it
returns), for the input and every parameter."""
import numpy as np

from gradlab.errors import CheckFailure
from gradlab.kinds import DIFFERENTIABLE, INPUT_GRAD, LOSS
from gradlab.numeric import Tensor, compare, elementwise_gradient
from gradlab.subject import call_cross_entropy
from gradlab.suite import Outcome, check

TOLERANCE = {"float64": 1e-6, "float32": 2e-2}
STEP = {"float64": 1e-6, "float32": 1e-3}


def gradient_problem(subject, rng):
    """(tensors, f): the arrays to differentiate, with the student's analytical
    gradients captured before any perturbation, and the objective."""
    kind, cfg = subject.kind, subject.cfg
    if kind.has(LOSS):
        logits = rng.standard_normal(kind.input_shape(cfg)).astype(cfg.np_dtype)
        targets = rng.integers(0, cfg.vocab_size, size=logits.shape[:-1])
        _, grad = call_cross_entropy(subject, logits, targets)
        tensors = [Tensor("logits", logits, grad.astype(np.float64))]
        return tensors, lambda: call_cross_entropy(subject, logits, targets)[0]
    module, slots = subject.fresh(rng)
    x = subject.make_input(rng)
    out = subject.forward(module, x)
    g = rng.standard_normal(out.shape)
    dx = subject.backward(module, g.astype(out.dtype))
    grads = subject.read_grads(slots)
    tensors = [Tensor("x", x, dx.astype(np.float64))] if kind.has(INPUT_GRAD) else []
    tensors += [Tensor(s.name, s.value, grads[s.name].astype(np.float64)) for s in slots]
    return tensors, lambda: float(np.sum(subject.forward(module, x).astype(np.float64) * g))


@check("gradient", needs={DIFFERENTIABLE}, order=10,
       summary="analytical gradients (input and every parameter) match numerical ones on sum(out * g)")
def gradient(subject, rng):
    dtype = subject.cfg.np_dtype.name
    tensors, f = gradient_problem(subject, rng)
    results = [compare(t.name, t.analytical, elementwise_gradient(f, t.array, STEP[dtype]), TOLERANCE[dtype])
               for t in tensors]
    table = [{"tensor": r.name, "shape": list(t.array.shape), "error": r.max_rel_err, "tolerance": r.tolerance,
              "ok": r.ok, "worst": [list(w) for w in r.worst]} for r, t in zip(results, tensors)]
    worst = max(results, key=lambda r: r.max_rel_err / r.tolerance)
    metrics = {"max_error": worst.max_rel_err, "tolerance": worst.tolerance, "worst_tensor": worst.name}
    bad = [r for r in results if not r.ok]
    if bad:
        r = max(bad, key=lambda r: r.max_rel_err / r.tolerance)
        index, a, n = r.worst[0]
        others = f"; also wrong: {', '.join(b.name for b in bad if b is not r)}" if len(bad) > 1 else ""
        raise CheckFailure(
            f"{subject.kind.name}: gradient of {r.name!r} is wrong: worst at index {index}: "
            f"analytical {a:.6g}, numerical {n:.6g} (error {r.max_rel_err:.2e} of the gradient's scale "
            f"{r.scale:.3g}; tolerance {r.tolerance:.0e}){others}",
            metrics, {"tensors": table})
    return Outcome(f"{len(results)} tensors match; max error {worst.max_rel_err:.1e} "
                   f"(tolerance {worst.tolerance:.0e})", metrics, {"tensors": table})
