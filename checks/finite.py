"""`finite`: large-magnitude but valid inputs give finite outputs and
gradients. exp overflows above ~709 in float64 (~88 in float32), so a softmax
without the max subtraction, or a log of a probability that underflowed to 0,
turns logits around 1e3 into inf and NaN; a correct implementation does not.

In float16 (largest number 65504, exp overflows above 11.09, squares of values
below 2.4e-4 underflow to 0) a module also gets small inputs (x * 1e-3): a
LayerNorm whose backward raises the variance to a power ((var + eps) ** -1.5
is 2.7e7 for var = 1e-6) overflows there, the reference's 1/sqrt(var + eps)
form does not. The failure names the overflow or underflow, and the NumPy
operation that reported it when NumPy's warnings reach gradlab."""
import re
import warnings

import numpy as np

from gradlab.contract.errors import CheckFailure, StudentError
from gradlab.execution.harness import describe
from gradlab.contract.kinds import ATTN_WEIGHTS, DIFFERENTIABLE, PROBABILITIES
from gradlab.contract.suite import Outcome, check
from gradlab.contract.numbers import counted
from gradlab.execution.subject import in_parameter_shape

SCALE = 1e3             # logits around 1e3; float inputs multiplied by 1e3 (attention scores then reach ~1e6)
EMBEDDING_SCALE = 30.0  # token kinds: the (V, D) and (max_len, D) tables are scaled instead
# float16's largest number is 65504 and exp overflows above 11.09: inputs x 16 make attention scores reach
# ~100s (a softmax without the max shift gives inf) while a correct module's values stay far below 65504
SCALE_FLOAT16 = 16.0
SMALL_FLOAT16 = 1e-3    # float16 only: small inputs, whose variance (1e-6) is below float16's smallest normal
_FLOAT16_LARGE_HINT = ("float16 overflows above 65504 and exp above 11.09: subtract the row maximum before exp, "
                       "and keep intermediate values (sums of squares, powers) below 65504")
_FLOAT16_SMALL_HINT = ("underflow in float16: squares of values below 2.4e-4 are 0 and a variance of 1e-6 is below "
                       "float16's smallest normal number (6.1e-05), so a power of it overflows ((var + eps) ** -1.5 is "
                       "2.7e7 > 65504) or a division by it blows up; use inv_std = 1 / sqrt(var + eps) and the xhat "
                       "form of the backward, or compute the statistics in float32")

_SOFTMAX_HINT = ("subtract the row maximum before exp (exp(x - x.max(axis, keepdims=True))): it changes nothing "
                 "mathematically and keeps exp from overflowing")
_UNDERFLOW_HINT = ("the NaN is 0/0: every exp in a row underflowed to 0, which happens when the maximum subtracted is "
                   "taken over the whole array (np.max(x)) or the wrong axis instead of each row's own: subtract "
                   "x.max(axis=-1, keepdims=True)")
# attention: also a row's maximum taken before the mask (over future or padded scores), the weights masked after
_ATTENTION_UNDERFLOW_HINT = ("the NaN is 0/0: every exp in a row underflowed to 0, which happens when the maximum "
                             "subtracted is not the row's own: taken over the whole array (np.max(x)) or the wrong "
                             "axis, or taken before the mask, over scores masked afterwards (the future, padding): a "
                             "masked score above every allowed one by ~750 leaves the allowed exps all 0; fill the "
                             "masked scores with -inf first, then subtract scores.max(axis=-1, keepdims=True)")
_LOSS_HINT = ("compute log-softmax with the log-sum-exp trick: z = logits - logits.max(-1, keepdims=True); "
              "log_probs = z - log(exp(z).sum(-1, keepdims=True)); taking log of a softmax that underflowed "
              "to 0 gives -inf, and exp of a large logit without the max subtraction gives inf")


def _nonfinite(value, what, shape):
    """None when `value` is a finite float array of `shape`; else (index, word, count)."""
    if not isinstance(value, np.ndarray) and not (np.isscalar(value) and shape == ()):
        raise StudentError(f"{what} returned {describe(value)}; it must return an array of shape {shape}")
    value = np.asarray(value)
    if value.dtype.kind != "f":
        raise StudentError(f"{what} returned an array of dtype {value.dtype}; it must be floating point")
    if tuple(value.shape) != tuple(shape):
        raise StudentError(f"{what} returned shape {tuple(value.shape)}; expected {tuple(shape)}")
    bad = ~np.isfinite(value)
    if not bad.any():
        return None
    index = tuple(int(i) for i in np.argwhere(bad)[0])
    word = "NaN" if np.isnan(value[index]) else ("inf" if value[index] > 0 else "-inf")
    return index, word, int(bad.sum())


def _fail(kind, what, found, setting, hint):
    index, word, count = found
    where = f" at index {index}" if index else ""
    raise CheckFailure(f"{kind.name}: {what} is {word}{where} ({count} non-finite values) with {setting}, "
                       f"which is a valid input: {hint}", {"non_finite": count, "tensor": what})


@check("finite", any_of={DIFFERENTIABLE, PROBABILITIES}, forms={"module", "function"}, order=40,
       summary="large-magnitude valid inputs (e.g. logits around 1e3) give finite outputs and gradients")
def finite(subject, rng):
    kind, cfg = subject.kind, subject.cfg
    if kind.form == "function":
        x = (SCALE * rng.standard_normal(kind.input_shape(cfg))).astype(cfg.np_dtype)
        setting = f"logits around {SCALE:g} (max |x| = {float(np.abs(x).max()):.3g})"
        if kind.has(PROBABILITIES):
            out = subject.call(x, what="softmax(x)")
            found = _nonfinite(out, "softmax(x)", x.shape)
            if found:
                _fail(kind, "softmax(x)", found, setting,
                      _UNDERFLOW_HINT if _rows_underflow(x, out) else _SOFTMAX_HINT)
            return Outcome(f"finite with {setting}")
        targets = rng.integers(0, cfg.vocab_size, size=x.shape[:-1])
        got = subject.call(x, targets, what="cross_entropy(logits, targets)")
        if not isinstance(got, (tuple, list)) or len(got) != 2:
            raise StudentError(f"cross_entropy(logits, targets) returned {describe(got)}; "
                               "it must return (loss, grad_logits)")
        for what, value, shape in (("the loss", got[0], ()), ("grad_logits", got[1], x.shape)):
            found = _nonfinite(np.asarray(value) if np.isscalar(value) else value, what, shape)
            if found:
                _fail(kind, what, found, setting, _LOSS_HINT)
        return Outcome(f"loss and grad_logits finite with {setting}")

    module, slots = subject.fresh(rng)
    inputs = subject.make_inputs(rng)
    x = inputs[0]
    float16 = cfg.np_dtype == np.float16
    if not any(spec.role == "float" for spec in kind.input_specs()):
        # ids cannot be scaled: scale the embedding tables instead (the logits of an lm then reach ~1e3)
        tables = {(cfg.vocab_size, cfg.d_model), (cfg.max_len, cfg.d_model)}
        for slot in slots:
            if slot.value.shape in tables:
                slot.value *= EMBEDDING_SCALE
        settings = [(inputs, f"the embedding tables scaled by {EMBEDDING_SCALE:g}", _FLOAT16_LARGE_HINT)]
    else:
        # every float input scaled (x, and the encoder memory of a cross-attention)
        floats = [s.name for s in kind.input_specs() if s.role == "float"]
        scales = ([(SCALE_FLOAT16, " in float16 (largest number 65504; exp overflows above 11.09)",
                    _FLOAT16_LARGE_HINT),
                   (SMALL_FLOAT16, " in float16 (a variance of ~1e-6, below float16's smallest normal 6.1e-05)",
                    _FLOAT16_SMALL_HINT)] if float16 else [(SCALE, "", None)])
        settings = []
        for scale, note, float16_hint in scales:
            scaled = tuple(a * np.asarray(scale, dtype=a.dtype) if spec.role == "float" else a
                           for spec, a in zip(kind.input_specs(), inputs))
            setting = (f"the input x scaled by {scale:g}" if floats == ["x"] else
                       f"the inputs ({', '.join(floats)}) scaled by {scale:g}") + note
            settings.append((scaled, setting, float16_hint))
    hint = ("in the attention's softmax, " + _SOFTMAX_HINT + "; the scores grow with the square of the input"
            if kind.has(ATTN_WEIGHTS) else
            "look for exp, a power or a division that overflows for large values (an unstable softmax inside, "
            "exp-based tanh/GELU, a variance computed without eps)")
    for scaled, setting, float16_hint in settings:
        checked = _probe(subject, kind, cfg, module, scaled, rng, setting, float16_hint if float16 else hint)
    what = " and ".join(s for _, s, _ in settings)
    if kind.name == "layernorm" and not float16:
        _shift_invariant(subject, module, x)
        what += f", and moved by {SHIFT:g} (the output does not move)"
    if subject.no_backward:
        return Outcome(f"output finite with {what} ({subject.no_backward}: gradients not checked)", {"tensors": 1})
    return Outcome(f"output and {counted(checked - 1, 'gradient')} finite with {what}", {"tensors": checked})


SHIFT = 3e3            # layernorm: a common offset of the row, which normalising removes
SHIFT_TOLERANCE = 2e-2  # of the output's size: the offset rounds x by ~2e-4 in float32; cancellation moves it by ~1


def _shift_invariant(subject, module, x):
    """LayerNorm(x + SHIFT) is LayerNorm(x) (the row's mean is removed): a variance computed as
    mean(x**2) - mean(x)**2 cancels every digit at a large mean in float32 and fails (NaN or ~1 off)."""
    out = subject.forward(module, x.copy()).astype(np.float64)
    # the raw output (forward's validation would call a NaN here an error "on ordinary inputs")
    moved = subject.run("forward", module.forward, (x.astype(np.float64) + SHIFT).astype(x.dtype))
    nonfinite = _nonfinite(moved, "forward", out.shape)
    scale = float(np.max(np.abs(out), initial=0.0))
    with np.errstate(all="ignore"):
        err = float("nan") if nonfinite else float(np.max(np.abs(np.asarray(moved, np.float64) - out), initial=0.0))
    if err <= SHIFT_TOLERANCE * max(scale, 1e-30):
        return
    found = "NaN or inf" if err != err else f"{err:.3g} ({err / max(scale, 1e-30):.2g} of the output's size)"
    raise CheckFailure(
        f"layernorm: forward(x + {SHIFT:g}) differs from forward(x) by {found}; normalising removes each row's "
        "mean, so a common offset must not move the output. A variance computed as mean(x**2) - mean(x)**2 loses "
        "its digits to cancellation when the mean is large (float32 keeps 7; negative, it is NaN under the sqrt): "
        "compute it from the centred values, ((x - mean)**2).mean(axis=-1, keepdims=True), or x.var(axis=-1)",
        {"shift": SHIFT, "max_error": err})


def _probe(subject, kind, cfg, module, inputs, rng, setting, hint):
    """Forward and backward at `inputs`; raises CheckFailure at the first non-finite tensor.
    NumPy's overflow/underflow warnings seen meanwhile name the operation."""
    with warnings.catch_warnings(record=True) as seen, np.errstate(over="warn", under="warn", invalid="warn",
                                                                    divide="warn"):
        warnings.simplefilter("always")
        return _forward_backward(subject, kind, cfg, module, inputs, rng, setting, hint, seen)


def _rows_underflow(x, out):
    """Every NaN row of softmax(x) lies so far below x's overall maximum that exp of it underflows to 0:
    the shift was one maximum of the whole array, not each row's own."""
    nan_rows = np.isnan(out).any(axis=-1)
    if not nan_rows.any():
        return False
    below = float(x.max()) - x.max(axis=-1)[nan_rows]
    return bool((below > -np.log(np.finfo(x.dtype).tiny)).all())


def _underflowed(word, seen):
    """A NaN that NumPy saw made as 0/0 after exp underflowed (and nothing overflowed)."""
    said = {str(w.message) for w in seen}
    return (word == "NaN" and any("underflow encountered in exp" in m for m in said)
            and any("invalid value encountered in" in m and "divide" in m for m in said)
            and not any("overflow" in m for m in said))


def _reported(seen):
    """NumPy's own words for what went wrong, e.g. 'overflow encountered in power' (overflow and invalid first)."""
    words = []
    for w in seen:
        m = re.search(r"(overflow|underflow|invalid value|divide by zero) encountered in \w+", str(w.message))
        if m and m.group(0) not in words:
            words.append(m.group(0))
    words.sort(key=lambda w: w.startswith("underflow"))
    return ("; NumPy reported: " + ", ".join(words[:3])) if words else ""


def _forward_backward(subject, kind, cfg, module, inputs, rng, setting, hint, seen):
    """The number of tensors found finite (output and gradients)."""
    def fail(what, found):
        why = _ATTENTION_UNDERFLOW_HINT if kind.has(ATTN_WEIGHTS) and _underflowed(found[1], seen) else hint
        _fail(kind, what, found, setting, why + _reported(seen))

    out = subject.run("forward", module.forward, *subject.complete(inputs))
    found = _nonfinite(out, "forward's output", kind.output_shape(cfg))
    if found:
        fail("forward's output", found)
    if subject.no_backward:
        return 1
    g = rng.standard_normal(kind.output_shape(cfg)).astype(cfg.np_dtype)
    dx = subject.run("backward", module.backward, g)
    checked = 1
    wanted = kind.grad_inputs()
    if len(wanted) > 1:
        if not isinstance(dx, (tuple, list)) or len(dx) != len(wanted):
            raise StudentError(f"backward returned {describe(dx)}; it must return a tuple of "
                               f"{len(wanted)} gradients ({', '.join('d' + s.name for s in wanted)})")
        grads = list(zip(wanted, dx))
    else:
        grads = [(wanted[0], dx)] if wanted else []
    for spec, d in grads:
        what = "backward's dL/dx" if len(wanted) == 1 else f"backward's d{spec.name}"
        found = _nonfinite(d, what, spec.shape(cfg))
        if found:
            fail(what, found)
        checked += 1
    for slot in subject.slots(module):
        grad = subject.read_grad(slot)
        if grad is None:
            raise StudentError(f"backward left no gradient for parameter {slot.name!r}")
        found = _nonfinite(in_parameter_shape(grad, slot.value), f"the gradient of {slot.name!r}", slot.value.shape)
        if found:
            fail(f"the gradient of {slot.name!r}", found)
        checked += 1
    return checked
