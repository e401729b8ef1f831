"""`backward`: three properties every correct backward has, checked with a few
backward calls and no finite differences at all:

1. repeatable: calling backward twice after one forward gives the same
   gradients (no `+=` into the gradients, no cache changed in place);
2. zero in, zero out: backward(zeros) gives gradients that are exactly 0;
3. linear: backward(a*g1 + b*g2) == a*backward(g1) + b*backward(g2);
4. for a table indexed by position (a positional embedding, alone or in an
   LM): after a shorter sequence, its rows beyond T have no gradient.
(A table indexed by token id whose rows outside the batch stay nonzero under 2 is
named as such: rows of an earlier call, zeroed only where this batch touches.)

Each is a cause the `gradient` check only shows as "wrong numbers"; here the
failure says which property broke, for which tensor, in plain words.
"""
import numpy as np

from gradlab.contract.errors import CheckFailure, StudentError
from gradlab.contract.numbers import distinct
from gradlab.contract.kinds import ANY_LENGTH, CAUSAL, DIFFERENTIABLE, core_shape
from gradlab.execution.harness import reading_grads_ahead
from gradlab.numerics.tolerance import BACKWARD_LINEAR_MAX as LINEAR_MAX, BACKWARD_LINEAR_ULPS as LINEAR_ULPS
from gradlab.numerics.tolerance import BACKWARD_REPEAT_ULPS as REPEAT_ULPS, computed_eps, eps_of
from gradlab.contract.records import table
from gradlab.contract.suite import Outcome, check

A, B = 0.5, -2.0       # exactly representable, so a*g1 + b*g2 adds no rounding of its own


def _words(name):
    return f"the input gradient {name!r} (backward's return)" if name in ("x", "memory") else \
        f"the gradient of {name!r}"


def _run(subject, module, slots, g):
    """One backward on a copy of g (after the forward already done): {name: float64 copy}."""
    with reading_grads_ahead(slots, module):     # read below: through a worker, in backward's request
        dxs = subject.backward(module, g.copy())
    result = {spec.name: d.astype(np.float64) for spec, d in zip(subject.kind.grad_inputs(), dxs)}
    result.update({k: v.astype(np.float64) for k, v in subject.read_grads(slots).items()})
    return result


def _worst(got, want, tol_ulps, eps, floor, cap=None):
    """(index, got, want, max |difference|, allowed) where got and want differ most, if beyond the allowance.
    The allowance is relative to the larger of this tensor's entries and `floor`, the largest gradient
    entry of the whole module: rounding comes from the module's intermediates, so a gradient that is
    exactly 0 in theory (the key bias: softmax ignores a shift) is noise on the module's scale, not its own."""
    diff = np.abs(got - want)
    scale = max(float(np.max(np.abs(got), initial=0.0)), float(np.max(np.abs(want), initial=0.0)), floor)
    allowed = tol_ulps * eps * scale if cap is None else min(tol_ulps * eps, cap) * scale
    if diff.size == 0 or float(diff.max()) <= allowed:
        return None
    k = int(np.argmax(diff))
    index = tuple(int(i) for i in np.unravel_index(k, diff.shape))
    return index, float(got.flat[k]), float(want.flat[k]), float(diff.max()), allowed


def _parameters_kept(kind, slots, before):
    """backward fills gradients; moving the parameters is the optimizer's (CONTRACT §2). A backward that
    updates them itself (W -= lr * dW, a tutorial habit) makes every later call see other weights: the
    gradient check then reads it as a forward that is not repeatable. Said here as what it is."""
    for slot in slots:
        old = before[slot.name]
        if slot.value.shape == old.shape and not np.array_equal(slot.value, old, equal_nan=True):
            moved = float(np.max(np.abs(slot.value.astype(np.float64) - old)))
            raise CheckFailure(
                f"{kind.name}: backward changed the parameter {slot.name!r} itself (by up to {moved:.3g}): an "
                "update inside backward (W -= lr * dW)? backward only fills the gradients; the optimizer moves "
                "the parameters (gradlab's checks call backward many times on the same weights)",
                {"parameter": slot.name, "moved": moved})


@check("backward", needs={DIFFERENTIABLE}, forms={"module"}, order=12,
       summary="backward is repeatable, gives zero gradients for a zero upstream gradient, and is linear in it")
def backward(subject, rng):
    kind = subject.kind
    module, slots = subject.fresh(rng)
    inputs = subject.make_inputs(rng)
    out = subject.forward(module, *inputs)
    # the precision the module computes in: its lowest among output, parameters and inputs, or float32 when its
    # float64 output is float32 numbers (float32 arithmetic inside, CONTRACT §6: judged as float32, as the
    # gradient check judges it; a float32 part inside mixes float32 rounding into every gradient before it)
    eps = max([eps_of(out.dtype), computed_eps([out])] + [eps_of(s.value.dtype) for s in slots]
              + [eps_of(x.dtype) for x in inputs if isinstance(x, np.ndarray) and x.dtype.kind == "f"])
    g1 = rng.standard_normal(out.shape).astype(out.dtype)
    g2 = rng.standard_normal(out.shape).astype(out.dtype)

    before = {s.name: s.value.copy() for s in slots}
    first = _run(subject, module, slots, g1)
    _parameters_kept(kind, slots, before)
    refresh = None
    try:
        second = _run(subject, module, slots, g1)
    except StudentError:
        # a backward that frees what forward cached (self.x = None, a mask popped off a stack) runs once per
        # forward, as in training, which the contract allows: a forward on the same input before each backward
        refresh = lambda: subject.forward(module, *inputs)       # noqa: E731
        refresh()
        second = _run(subject, module, slots, g1)

    def run(g):
        if refresh is not None:
            refresh()
        return _run(subject, module, slots, g)
    zero = run(np.zeros_like(g1))
    other = run(g2)
    mixed = run((A * g1 + B * g2).astype(out.dtype))

    floor = max(float(np.max(np.abs(v), initial=0.0)) for v in first.values())
    failures, rows = [], []
    for name in first:
        row = {"tensor": name, "repeatable": True, "zero": True, "linear": True}
        # a gradient computed in float32 and returned as float64 rounds like float32 (CONTRACT §6)
        eps_here = max(eps, computed_eps([first[name]]))
        found = _worst(second[name], first[name], REPEAT_ULPS, eps, floor)
        if found:
            row["repeatable"] = False
            failures.append(("repeatable", name, found, _repeat_message(kind, name, found, first[name], second[name],
                                                                        zero[name])))
        z = zero[name]
        if np.any(z != 0):
            row["zero"] = False
            k = int(np.argmax(np.abs(z)))
            index = tuple(int(i) for i in np.unravel_index(k, z.shape))
            untouched = _untouched_rows(inputs, z)
            cause = ("it still holds the previous call's gradient: backward adds into the gradients (+=) instead "
                     "of setting them (=)" if _accumulates(second[name], z) else
                     f"every nonzero row (row {index[0]} among them) is of an id this call's batch does not hold: those "
                     "rows keep an earlier call's gradient, because backward sets only the rows this batch uses (dW[ids] = 0, "
                     "then np.add.at) in an array kept between calls; set it whole on every backward: "
                     "dW = np.zeros_like(W); np.add.at(dW, ids, grad_out)" if untouched else
                     "backward adds something that does not depend on grad_out (weight decay, a regulariser, "
                     "a constant?)")
            failures.append(("zero", name, None, (
                f"{kind.name}: backward(zeros) left {_words(name)} nonzero: {float(z.flat[k]):.6g} at index {index} "
                f"({int(np.count_nonzero(z))} of {z.size} entries nonzero). With a zero upstream gradient every "
                f"gradient must be exactly 0; {cause}")))
        expected = A * first[name] + B * other[name]
        found = _worst(mixed[name], expected, LINEAR_ULPS, eps_here, floor, cap=LINEAR_MAX)
        if not (row["repeatable"] and row["zero"]):
            row["linear"] = None      # not judged: a backward that is not repeatable cannot be linear either
        elif found:
            row["linear"] = False
            index, got, want, worst, allowed = found
            shown_got, shown_want = distinct(got, want)
            failures.append(("linear", name, found, (
                f"{kind.name}: backward is not linear in grad_out for {_words(name)}: backward({A:g}*g1 {B:+g}*g2) "
                f"gives {shown_got} at index {index}, but {A:g}*backward(g1) {B:+g}*backward(g2) gives {shown_want} "
                f"(difference {worst:.3g}, allowed {allowed:.2g}). The gradient must be a linear function of "
                "grad_out: no clipping, abs, squaring or normalising of grad_out, no branch on its sign or size")))
        rows.append(row)
    stale = _stale_rows(subject, module, slots, rng, mixed)
    if stale:
        failures.append(stale)
    views = [table("backward: properties per tensor", rows)]
    metrics = {"tensors": len(first), "backward_calls": 5,
               "failed_properties": ",".join(sorted({f[0] for f in failures}))}
    if failures:
        prop, name, _, message = failures[0]
        others = sorted({f"{p} ({n})" for p, n, _, _ in failures[1:]})
        also = f". Also broken: {', '.join(others)}" if others else ""
        metrics.update({"property": prop, "tensor": name})
        raise CheckFailure(message + also, metrics, {"views": views})
    freed = "" if refresh is None else (" (backward frees what forward cached, so a forward on the same input ran "
                                        "before each backward)")
    return Outcome(f"{len(first)} gradient{'s' if len(first) != 1 else ''}: backward twice gives the same, zeros give exact zeros, "
                   f"and backward is linear in grad_out{freed}", metrics, {"views": views})


def _stale_rows(subject, module, slots, rng, previous):
    """4. after a shorter sequence: a table indexed by position ((max_len, d_model): a positional embedding, alone
    or in an LM) gets gradient in rows [:T] only. A gradient allocated once and filled as dW[:T] = ... keeps the
    longer call's rows beyond T (`previous`: that call's gradients), which no call at one length shows. A
    (failure) or None; not judged when forward at T - 1 raises (the shapes check says so); other gradient there
    (an offset, weight[1:T+1]) is the gradient and reference checks' to name."""
    kind, cfg = subject.kind, subject.cfg
    # (leading axes of 1 as the contract allows: (1, max_len, d_model); a token table of the same shape, when
    # vocab_size == max_len, never matches: a correct one's rows beyond T are 0 or new, and the rows compared
    # must equal the longer call's exactly)
    table = [s for s in slots if core_shape(s.value.shape) == (cfg.max_len, cfg.d_model)]
    if not table or cfg.seq_len < 2 or len(kind.input_specs()) != 1 or not (kind.has(ANY_LENGTH) or kind.has(CAUSAL)):
        return None
    T = cfg.seq_len - 1
    short = subject.with_cfg(cfg.replace(seq_len=T))        # the same module, called at T
    try:
        out = short.forward(module, *short.make_inputs(rng))
        found = _run(short, module, slots, np.ones(out.shape, dtype=out.dtype))
    except StudentError:
        return None
    for slot in table:
        shape = (cfg.max_len, cfg.d_model)
        rows, before = found[slot.name].reshape(shape)[T:], previous[slot.name].reshape(shape)[T:]
        if np.any(rows != 0) and np.array_equal(rows, before):
            at = int(np.argmax(np.any(rows != 0, axis=1))) + T
            return ("shorter", slot.name, None, (
                f"{kind.name}: after a call at T = {cfg.seq_len}, backward at T = {T} left row {at} of "
                f"{_words(slot.name)} nonzero ({float(np.abs(rows).max()):.6g}): only rows [:T] get gradient, the "
                f"rest must be 0. The gradient keeps a longer call's rows: set it whole in backward "
                f"(dW = np.zeros_like(W); dW[:T] = grad_out.sum(axis=0)), not only dW[:T] in an array kept "
                f"between calls"))
    return None


def _untouched_rows(inputs, z):
    """The nonzero rows of a table's gradient `z` (rows indexed by token id), when none of them is an id of the
    call's integer inputs: stale rows, which no correct backward leaves (an empty list otherwise)."""
    ids = [x.ravel() for x in inputs if isinstance(x, np.ndarray) and x.dtype.kind in "iu"]
    if not ids or z.ndim != 2:
        return []
    used = np.unique(np.concatenate(ids))
    rows = np.flatnonzero(np.any(z != 0, axis=1))
    return [] if np.isin(rows, used).any() else [int(r) for r in rows]


def _accumulates(previous, after_zero):
    """backward(zeros) returned what the call before it left: nothing was reset, only added to."""
    return bool(np.any(after_zero != 0)) and np.allclose(after_zero, previous, rtol=1e-6, atol=0)


def _repeat_message(kind, name, found, first, second, after_zero):
    index, got, want, worst, allowed = found
    if _accumulates(second, after_zero):
        cause = ("backward adds into the gradient (+=) instead of setting it (=): each call piles onto the last "
                 "(a backward with grad_out = 0 leaves it unchanged); gradlab reads the gradients after one "
                 "backward and calls no zero_grad() (CONTRACT §2), so set them, or zero them where backward "
                 "starts")
    else:
        cause = ("backward changes something forward cached (an in-place operation such as `cache *= ...` or "
                 "`h[h < 0] = 0` on a saved array), so the second call starts from different values")
    shown_want, shown_got = distinct(want, got)
    return (f"{kind.name}: calling backward twice after one forward changed {_words(name)}: {shown_want} the first "
            f"time, {shown_got} the second, at index {index} (difference {worst:.3g}): {cause}")
