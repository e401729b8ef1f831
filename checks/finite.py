"""`finite`: large-magnitude but valid inputs give finite outputs and
gradients. exp overflows above ~709 in float64 (~88 in float32), so a softmax
without the max subtraction, or a log of a probability that underflowed to 0,
turns logits around 1e3 into inf and NaN; a correct implementation does not."""
import numpy as np

from gradlab.contract.errors import CheckFailure, StudentError
from gradlab.execution.harness import describe
from gradlab.contract.kinds import ATTN_WEIGHTS, DIFFERENTIABLE, PROBABILITIES
from gradlab.contract.suite import Outcome, check

SCALE = 1e3             # logits around 1e3; float inputs multiplied by 1e3 (attention scores then reach ~1e6)
EMBEDDING_SCALE = 30.0  # token kinds: the (V, D) and (max_len, D) tables are scaled instead

_SOFTMAX_HINT = ("subtract the row maximum before exp (exp(x - x.max(axis, keepdims=True))): it changes nothing "
                 "mathematically and keeps exp from overflowing")
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
                _fail(kind, "softmax(x)", found, setting, _SOFTMAX_HINT)
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
    if not any(spec.role == "float" for spec in kind.input_specs()):
        # ids cannot be scaled: scale the embedding tables instead (the logits of an lm then reach ~1e3)
        tables = {(cfg.vocab_size, cfg.d_model), (cfg.max_len, cfg.d_model)}
        for slot in slots:
            if slot.value.shape in tables:
                slot.value *= EMBEDDING_SCALE
        setting = f"the embedding tables scaled by {EMBEDDING_SCALE:g}"
    else:
        # every float input scaled (x, and the encoder memory of a cross-attention)
        inputs = tuple(a * np.asarray(SCALE, dtype=a.dtype) if spec.role == "float" else a
                       for spec, a in zip(kind.input_specs(), inputs))
        floats = [s.name for s in kind.input_specs() if s.role == "float"]
        setting = f"the input x scaled by {SCALE:g}" if floats == ["x"] else \
            f"the inputs ({', '.join(floats)}) scaled by {SCALE:g}"
    hint = ("in the attention's softmax, " + _SOFTMAX_HINT + "; the scores grow with the square of the input"
            if kind.has(ATTN_WEIGHTS) else
            "look for exp, a power or a division that overflows for large values (an unstable softmax inside, "
            "exp-based tanh/GELU, a variance computed without eps)")
    out = subject._call("forward", module.forward, *subject.complete(inputs))
    found = _nonfinite(out, "forward's output", kind.output_shape(cfg))
    if found:
        _fail(kind, "forward's output", found, setting, hint)
    if subject.no_backward:
        return Outcome(f"output finite with {setting} ({subject.no_backward}: gradients not checked)",
                       {"tensors": 1})
    g = rng.standard_normal(kind.output_shape(cfg)).astype(cfg.np_dtype)
    dx = subject._call("backward", module.backward, g)
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
            _fail(kind, what, found, setting, hint)
        checked += 1
    for slot in subject.slots(module):
        grad = subject._call(f"reading the gradient of {slot.name!r}", slot.grad)
        if grad is None:
            raise StudentError(f"backward left no gradient for parameter {slot.name!r}")
        found = _nonfinite(grad, f"the gradient of {slot.name!r}", slot.value.shape)
        if found:
            _fail(kind, f"the gradient of {slot.name!r}", found, setting, hint)
        checked += 1
    return Outcome(f"output and {checked - 1} gradients finite with {setting}", {"tensors": checked})
