"""`key_padding`: a key_padding_mask (B, S), True where the key is padding.

1. Padded keys get exactly zero weight: changing the memory at padded positions changes
   no output (and attn_weights, when kept with shape (B, H, T, S), are 0 there).
2. No gradient flows into padded positions: dmemory is exactly 0 there.
3. A sample whose keys are all padded gives finite outputs and gradients (no NaN). What
   such a row gives is the module's choice, since nothing downstream should use it:
   gradlab's reference gives all-zero attention weights (so the context is 0 and the
   output is the output projection's bias); -1e9 masking gives uniform weights. Both pass;
   -inf masking with a plain softmax gives NaN (0/0) and fails.
The mask makes the softmax exact: exp(-inf) (or exp(-1e9 - max)) is exactly 0, so the
tolerances are only rounding guards."""
import numpy as np

from gradlab.contract.errors import CheckFailure, StudentError
from gradlab.contract.kinds import KEY_PADDING
from gradlab.contract.suite import Outcome, check
from gradlab.contract.numbers import counted
from gradlab.execution.harness import describe
from gradlab.execution.subject import copies
from gradlab.numerics.tolerance import computed_dtype, tolerance


_HOW = ("set scores[b, :, :, j] = -inf (or -1e9) where key_padding_mask[b, j] is True, before the softmax "
        "(broadcast the mask as mask[:, None, None, :])")


def _positions(subject):
    specs = subject.kind.input_specs()
    names = [s.name for s in specs]
    return names.index("memory"), names.index("key_padding_mask")


@check("key_padding", needs={KEY_PADDING}, order=22,
       summary="padded keys get exactly zero weight, no gradient flows into them, a fully padded row gives no NaN")
def key_padding(subject, rng):
    kind, cfg = subject.kind, subject.cfg
    m, k = _positions(subject)
    module, _ = subject.fresh(rng)
    inputs = list(subject.make_inputs(rng))
    mask = inputs[k]
    padded = np.argwhere(mask)
    base = subject.forward(module, *inputs).astype(np.float64)
    # padded keys change nothing at all: the "repeat" row (same code, same numbers) of gradlab.numerics.tolerance;
    # a padded key may still move the rounding (it is in the row maximum when the mask comes after the softmax),
    # by float32's when the module computes in float32 whatever cfg.dtype says (CONTRACT §6)
    dtype = computed_dtype([base], cfg.np_dtype)
    tol = tolerance("repeat", dtype).allowed(max(float(np.abs(base).max()), 1.0))
    # 1. padded keys: their memory rows must not matter
    moved = copies(inputs)
    moved[m][mask] += (3 * rng.standard_normal(moved[m][mask].shape)).astype(moved[m].dtype)
    change = float(np.abs(subject.forward(module, *moved).astype(np.float64) - base).max())
    if change > tol:
        b, j = (int(i) for i in padded[0])
        # the opposite polarity: then the real keys are the ignored ones (judged on the samples that have both)
        flipped = copies(inputs)
        flipped[m][~mask] += 3
        mixed = mask.any(axis=1) & ~mask.all(axis=1)
        moved_real = np.abs(subject.forward(module, *flipped).astype(np.float64) - base)[mixed]
        inverted = float(moved_real.max(initial=0.0)) <= tol
        subject.forward(module, *inputs)
        zero = _padded_weights(subject, module, mask)
        how = ("padded keys must get exactly zero attention weight; the mask looks inverted: True means padded "
               "(ignored), False a real token" if inverted else
               "attn_weights are 0 at the padded keys, yet their scores still enter the softmax's sum: the mask "
               "multiplies the weights after the softmax (the real keys' weights then move with the padded keys "
               "and no longer sum to 1); " + _HOW if zero == 0.0 else
               "padded keys must get exactly zero attention weight; " + _HOW)
        row = mask[b]
        n = int(row.sum())
        left = "" if row[-n:].all() else (
            f" (sample {b}'s {n} padded key{'s are' if n != 1 else ' is'} not at its end: the mask marks padded keys "
            "anywhere; use it as it is, not as lengths)")
        raise CheckFailure(
            f"{kind.name}: changing the memory at padded key positions (e.g. sample {b}, key {j}) changed the "
            f"output by {change:.3g} (tolerance {tol:.1g}){left}: " + how,
            {"max_change": change, "tolerance": tol, "padded_keys": len(padded)})
    largest = _padded_weights(subject, module, mask)
    note = ""
    if largest is not None:
        if largest > 0:
            raise CheckFailure(f"{kind.name}: attn_weights at padded keys reach {largest:.3g}, not 0: "
                               + _HOW, {"max_padded_weight": largest})
        note = "; attn_weights are 0 at every padded key"
    # 2. no gradient into padded positions (a forward-only module: its forward half is still judged)
    leak = 0.0
    if subject.no_backward:
        note += f"; {subject.no_backward}, so no gradient checked"
    else:
        subject.forward(module, *inputs)
        grads = dict(zip([s.name for s in kind.grad_inputs()],
                         subject.backward(module, rng.standard_normal(base.shape).astype(cfg.np_dtype))))
        dmemory = grads["memory"]
        leak = float(np.abs(dmemory[mask]).max()) if mask.any() else 0.0
    if leak > 0:
        b, j = (int(i) for i in np.argwhere(mask & (np.abs(dmemory) > 0).any(-1))[0])
        raise CheckFailure(f"{kind.name}: dmemory is {leak:.3g} at padded positions (e.g. sample {b}, key {j}); no "
                           "gradient may flow into padding: with the weights exactly 0 there, the softmax backward "
                           "A * (dA - sum(dA * A)) and A^T @ dctx give exactly 0", {"max_padded_grad": leak})
    # 3. a sample padded entirely
    full = list(inputs)
    full[k] = mask.copy()
    full[k][0] = True
    out = subject.run("forward", module.forward, *full)
    _finite(kind, out, "forward's output")
    if not subject.no_backward:
        got = subject.run("backward", module.backward, np.ones_like(out))
        for name, g in zip([s.name for s in kind.grad_inputs()], got if isinstance(got, (tuple, list)) else (got,)):
            _finite(kind, g, f"d{name}")
    # 4. no mask at all: None, as CONTRACT §3 allows, is a mask with no padded key
    _no_mask(subject, module, inputs, k, tol)
    gradients = "" if subject.no_backward else ", dmemory is 0 there"
    return Outcome(f"{counted(len(padded), 'padded key')}: changing them changes nothing{gradients}{note}; a sample padded "
                   f"entirely gives finite outputs{'' if subject.no_backward else ' and gradients'}; "
                   "key_padding_mask=None is no padding", {"padded_keys": len(padded)})


def _no_mask(subject, module, inputs, k, tol):
    """forward (and backward) with key_padding_mask=None give what a mask with no padded key gives."""
    kind = subject.kind
    clear = list(copies(inputs))
    clear[k] = np.zeros_like(inputs[k])
    none = list(copies(inputs))
    none[k] = None
    g = np.random.default_rng(0).standard_normal(subject.output_shape()).astype(subject.cfg.np_dtype)
    want = _with_mask(subject, module, clear, g)
    try:
        got = _with_mask(subject, module, none, g)
    except StudentError as e:
        raise CheckFailure(f"{kind.name}: with key_padding_mask=None, {e}: the mask may be None (CONTRACT §3), "
                           "which means no key is padded; a seq2seq's decoder is called that way (test `if "
                           "key_padding_mask is not None` before using it, in forward and in backward)") from None
    for (name, w), (_, v) in zip(want, got):
        diff = float(np.abs(v - w).max())
        scale = max(float(np.abs(w).max()), 1.0)
        if diff > tol * scale:
            raise CheckFailure(f"{kind.name}: with key_padding_mask=None, {name} differs by {diff:.3g} from what a "
                               f"mask that pads nothing gives (tolerance {tol * scale:.1g}): None means no key is "
                               "padded", {"max_change": diff, "tolerance": tol * scale})


def _with_mask(subject, module, inputs, g):
    """[(what, float64 array)]: forward's output, then (with a backward) backward's gradients."""
    out = [("forward's output", subject.forward(module, *inputs).astype(np.float64))]
    if not subject.no_backward:
        grads = subject.backward(module, g.copy())
        out += [(f"backward's d{spec.name}", d.astype(np.float64))
                for spec, d in zip(subject.kind.grad_inputs(), grads)]
    return out


def _padded_weights(subject, module, mask):
    """The largest attention weight the module keeps (attn_weights, (B, H, T, S)) at a padded key, after its last
    forward; None when it keeps none of that shape."""
    weights = subject.attribute(module, "attn_weights")
    if not (isinstance(weights, np.ndarray) and weights.ndim == 4 and weights.shape[-1] == mask.shape[-1]
            and weights.shape[0] == mask.shape[0]):
        return None
    at_padded = np.abs(weights.astype(np.float64)[np.broadcast_to(mask[:, None, None, :], weights.shape)])
    return float(at_padded.max()) if at_padded.size else None


def _finite(kind, value, what):
    if not isinstance(value, np.ndarray):
        raise CheckFailure(f"{kind.name}: with sample 0 padded entirely, {what} is {describe(value)}")
    bad = ~np.isfinite(value)
    if bad.any():
        index = tuple(int(i) for i in np.argwhere(bad)[0])
        raise CheckFailure(
            f"{kind.name}: with every key of sample 0 padded, {what} is {value[index]} at {index} "
            f"({int(bad.sum())} non-finite values): a row whose scores are all -inf gives exp(-inf - (-inf)) = NaN. "
            "Such a row has nothing to attend to: give it zero weights (divide by the row sum only where it is "
            "> 0, and subtract a finite max), or mask with a large finite value instead of -inf (uniform weights): "
            + ("-1e4 or np.finfo(scores.dtype).min in float16, whose largest number is 65504 (-1e9 overflows to "
               "-inf there)" if value.dtype == np.float16 else "-1e9"),
            {"non_finite": int(bad.sum())})
