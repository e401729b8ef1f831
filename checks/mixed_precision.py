"""`mixed_precision`: float32 master weights, float16 compute, loss scaling.

Two parts, against gradlab's reference (modules/mixed_precision.py):
1. the articles' conversions: to_half_precision turns float32 arrays into
   float16 copies and leaves every other array as it is (float64, integer ids),
   to_full_precision turns float16 back into float32; the caller's dict and
   arrays are untouched;
2. the loss-scaling step, in static and in dynamic mode, over a scripted run of
   float16 gradients of loss * loss_scale: ordinary gradients, gradients of 1e-7
   (they exist in float16 only scaled: unscaled in float16 they underflow), an
   inf (a float16 overflow of the scaled backward) and a NaN, which must be
   skipped, and enough good steps for dynamic scaling to grow the scale.
   Each step gets fresh zero master weights, so the update itself is compared,
   exactly as float32 computes it: -lr * half_grad.astype(float32) / loss_scale;
   one more step starts from weights float16 cannot hold, which must move by the
   update alone (float32 master weights, not rebuilt from a float16 copy).
"""
import numpy as np

from gradlab.contract.errors import CheckFailure, StudentError
from gradlab.contract.kinds import MIXED_PRECISION
from gradlab.contract.records import curve, table
from gradlab.contract.suite import Outcome, check
from gradlab.contract.options import FIELDS
from gradlab.execution.harness import describe
from gradlab.execution.loader import reference as reference_impl

UPDATE_TOL = 2e-6          # relative to the reference update's largest entry: float32 rounding only (16 ulps; the ways
                           # of writing lr * g / scale differ by 3 at most); a float16 1/loss_scale is off by 3.8e-6 at 256.5
MOVED_LR = 0.37            # the third run's lr, as a multiple of cfg.lr
SHAPES = {"w": (3, 4), "b": (4,)}


def script(cfg, rng):
    """[(what, true float32 gradients or a marker)]: the run both implementations see."""
    normal = lambda scale: {k: (scale * rng.standard_normal(s)).astype(np.float32) for k, s in SHAPES.items()}  # noqa
    steps = [("ordinary", normal(1e-2)), ("small (1e-7)", normal(1e-7)), ("inf", normal(1e-2))]
    steps += [("ordinary", normal(1e-2)) for _ in range(cfg.growth_interval)]
    # good steps after the growth, before the next overflow: the count of good steps starts again at a growth
    # (a count left running doubled the scale on every later good step, and passed)
    steps += [("ordinary", normal(1e-2)), ("ordinary", normal(1e-2))]
    steps += [("NaN", normal(1e-2)), ("ordinary", normal(1e-2))]
    return steps


def half_grads(what, grads, loss_scale):
    """float16 gradients of loss * loss_scale, with an overflow planted where the script says so."""
    out = {k: (g * np.float32(loss_scale)).astype(np.float16) for k, g in grads.items()}
    if what == "inf":
        out["w"][1, 2] = np.inf
    elif what == "NaN":
        out["b"][0] = np.nan
    return out


@check("mixed_precision", needs={MIXED_PRECISION}, order=6,
       summary="to_half/to_full_precision as the articles; loss scaling: unscale in float32, skip inf/NaN, "
               "static and dynamic scale")
def mixed_precision(subject, rng):
    kind = subject.kind
    conversions(subject, rng)
    rows, views, skipped = [], [], 0
    base = subject.cfg
    # the third run moves the scale and the interval: a loss_scale or growth_interval hard-coded to the default
    # (a scale that is no whole number: a scale kept as an int, halved with //, shows at once; and never below
    # the least cfg.loss_scale there is, 1: --set loss_scale=1 made it 0.25, refused mid-run with exit 2)
    # (the interval moves down where it cannot move up: --set growth_interval=10000 made it 10002, refused too)
    # (and the learning rate: the kind's lr of 1 hid an update that leaves lr out, and a float16 lr, which
    # rounds 0.37 by 3.5e-4)
    interval = base.growth_interval + 2 if base.growth_interval + 2 <= 10000 else base.growth_interval - 2
    # (and lr up instead of down where down would leave lr's range: --set lr=1e-8 made it 3.7e-9, refused mid-run)
    lr = base.lr * MOVED_LR if base.lr * MOVED_LR >= FIELDS["lr"].low else base.lr / MOVED_LR
    moved = {"loss_scale": max(1.0, base.loss_scale / 4) + 0.5, "growth_interval": max(1, interval), "lr": lr}
    for mode, changes in (("static", {}), ("dynamic", {}), ("dynamic", moved)):
        cfg = base.replace(loss_scaling=mode, **changes)
        if changes:
            mode = (f"dynamic (gradlab's third run: cfg.loss_scale = {cfg.loss_scale:g}, cfg.growth_interval = "
                    f"{cfg.growth_interval}, cfg.lr = {cfg.lr:g})")
        steps = script(cfg, rng)
        theirs_subject = subject.with_cfg(cfg)
        theirs, ours = theirs_subject.build(), reference_impl().get(kind.name).target(cfg)
        scales = {"reference": [], "yours": []}
        for k, (what, grads) in enumerate(steps, start=1):
            scale = float(ours.loss_scale)
            got_scale = _scale(theirs_subject, theirs)
            if got_scale != scale:
                _fail_scale(kind, mode, cfg, k - 1, steps, got_scale, scale, rows, scales)
            g16 = half_grads(what, grads, scale)
            want_applied, want = _run(ours, g16)
            got_applied, got = _run_student(theirs_subject, theirs, g16)
            err = max(float(np.max(np.abs(got[n] - want[n]), initial=0.0)) for n in SHAPES)
            size = max(float(np.max(np.abs(want[n]), initial=0.0)) for n in SHAPES)
            rows.append({"mode": mode, "step": k, "gradients": what, "reference applied": want_applied,
                         "yours applied": got_applied, "loss scale": scale, "update error": err})
            scales["reference"].append(scale)
            scales["yours"].append(got_scale)
            skipped += not got_applied
            if got_applied != want_applied or err > UPDATE_TOL * max(size, 1e-30):
                _fail_step(kind, mode, k, what, scale, got_applied, want_applied, got, want, rows, g16, cfg.lr)
        final, got_final = float(ours.loss_scale), _scale(theirs_subject, theirs)
        if got_final != final:
            _fail_scale(kind, mode, cfg, len(steps), steps, got_final, final, rows, scales)
        views.append(curve(f"loss scale per step ({mode})", scales, ylabel="loss scale"))
    _master_kept(subject, base, rng)
    views.insert(0, table("loss scaling, step by step", rows))
    return Outcome(f"to_half_precision / to_full_precision convert as the articles; {len(rows)} steps of static and "
                   f"dynamic loss scaling match the reference (unscaled in float32, {skipped} inf/NaN steps skipped, "
                   f"the scale halves on overflow and doubles after {subject.cfg.growth_interval} good steps; again "
                   f"from loss_scale {moved['loss_scale']:g}, growth_interval {moved['growth_interval']}, "
                   f"lr {moved['lr']:g})",
                   {"steps": len(rows), "skipped_steps": skipped}, {"views": views})


def _master_kept(subject, cfg, rng):
    """One more step, from master weights float16 cannot hold (the steps above start from zeros, which survive any
    rounding): the weights must move by the update alone. A master rebuilt from its float16 copy
    (p[...] = p.astype(float16).astype(float32)) loses the point of float32 master weights: updates smaller than
    float16's spacing never add up."""
    cfg = cfg.replace(loss_scaling="static")
    start = {k: (1e-3 * (1 + rng.random(s))).astype(np.float32) for k, s in SHAPES.items()}
    g16 = half_grads("ordinary", {k: (1e-2 * rng.standard_normal(s)).astype(np.float32) for k, s in SHAPES.items()},
                     cfg.loss_scale)
    theirs_subject = subject.with_cfg(cfg)
    _, want = _run(reference_impl().get(subject.kind.name).target(cfg), g16, start)
    _, got = _run_student(theirs_subject, theirs_subject.build(), g16, start)
    for name in SHAPES:
        moved, should = got[name] - start[name], want[name] - start[name]
        # float32's rounding of the sum master + update, both ways of writing it (4 ulps of the weights)
        allowed = UPDATE_TOL * float(np.abs(should).max()) + 4 * float(np.finfo(np.float32).eps) * 2e-3
        if float(np.abs(moved - should).max()) > allowed:
            half = np.abs(start[name].astype(np.float16).astype(np.float64) - start[name] + should - moved).max()
            why = ("the master weights were rounded to float16 in the step (rebuilt from their float16 copy?): "
                   "keep them float32 throughout and round only the copy used for the forward (to_half_precision)"
                   if half <= allowed else
                   f"they moved by {float(np.abs(moved).max()):.3g} where the update is {float(np.abs(should).max()):.3g}")
            raise CheckFailure(f"{subject.kind.name}: a step from master weights of about 1e-3 (not representable in "
                               f"float16) moved {name!r} by other than the update: {why}",
                               {"error": float(np.abs(moved - should).max())})


def _scale(subject, obj):
    value = subject.attribute(obj, "loss_scale")
    if not isinstance(value, (int, float, np.floating, np.integer)) or isinstance(value, bool):
        raise StudentError(f"the mixed precision object has no numeric loss_scale attribute (found "
                           f"{describe(value)}); keep the current loss scale in self.loss_scale")
    return float(value)


def _zeros():
    return {k: np.zeros(s, dtype=np.float32) for k, s in SHAPES.items()}


def _run(ours, g16, start=None):
    """The reference's step from zero master weights (or copies of `start`): (applied, master as float64)."""
    master = _zeros() if start is None else {k: v.copy() for k, v in start.items()}
    applied = ours.step(master, {k: g.copy() for k, g in g16.items()})
    return bool(applied), {k: v.astype(np.float64) for k, v in master.items()}


def _run_student(subject, theirs, g16, start=None):
    """The student's step from zero master weights (or copies of `start`), its return value and the arrays it
    updates checked: (applied, master as float64)."""
    master = _zeros() if start is None else {k: v.copy() for k, v in start.items()}
    arrays = dict(master)
    applied = subject.step(theirs, master, {k: g.copy() for k, g in g16.items()})
    if not isinstance(applied, (bool, np.bool_)):
        raise StudentError(f"step(master, half_grads) returned {describe(applied)}; it must return True when it "
                           "updated the master weights and False when it skipped the step (inf or NaN gradients)")
    for name, arr in arrays.items():
        if master.get(name) is not arr:
            raise StudentError(f"step replaced master[{name!r}] with a new array; update the master weights in "
                               "place (p -= ...), the caller keeps its own references")
        if arr.dtype != np.float32:
            raise StudentError(f"master[{name!r}] is {arr.dtype} after step; master weights stay float32")
    return bool(applied), {k: v.astype(np.float64) for k, v in master.items()}


def _fail_step(kind, mode, k, what, scale, got_applied, want_applied, got, want, rows, g16, lr):
    where = f"{mode} loss scaling, step {k} ({what} gradients, loss scale {scale:g})"
    moved = any(np.any(got[n] != 0) for n in SHAPES)
    if not want_applied:
        cause = ("the float16 gradients contain " + ("an inf (the scaled backward overflowed float16)" if what == "inf"
                                                     else "a NaN") +
                 ": the step must be skipped, leaving the master weights unchanged, and step must return False"
                 + ("; your step updated the weights" if moved else "; your step left the weights but returned True"))
    elif not got_applied:
        cause = "the gradients are finite, so the step must be applied and return True; yours skipped it"
    else:
        cause = _update_cause(what, scale, got, want, g16, lr)
    raise CheckFailure(f"{kind.name}: {where}: {cause}", {"step": k, "loss_scale": scale},
                       {"views": [table("loss scaling, step by step", rows)]})


def _in_float16(g16, scale, lr):
    """The places float16 can round a step: (the words, the master weights after one step from zero) for the
    unscaling in float16, for the update lr * g in float16, and (a scale whose reciprocal float16 cannot hold)
    for 1/loss_scale taken in float16."""
    f16 = np.float16
    unscaled = {k: -(lr * (g / f16(scale)).astype(np.float32)) for k, g in g16.items()}
    update = {k: -(f16(lr) * (g.astype(np.float32) / np.float32(scale)).astype(f16)).astype(np.float32)
              for k, g in g16.items()}
    variants = [("they were unscaled in float16, where values below 6.1e-05 lose precision and below 6e-08 "
                 "underflow to 0; cast the gradients to float32 first, then divide by loss_scale", unscaled),
                ("they were unscaled in float32, but the update lr * grad was computed in float16 (a float16 lr, or "
                 "the gradient cast back to float16), where values below 6.1e-05 lose precision and below 6e-08 "
                 "underflow to 0; keep the update in float32: master -= lr * grad32", update)]
    if float(f16(1 / scale)) != 1 / scale:       # (a power of two's reciprocal is exact: nothing to tell apart)
        variants.append(("they were multiplied by 1/loss_scale taken in float16 (np.float16(1 / scale) is off by up "
                         "to 5e-4 of itself unless the scale is a power of two); divide the float32 gradients by "
                         "loss_scale itself",
                         {k: -(lr * (g.astype(np.float32) * np.float32(f16(1 / scale)))) for k, g in g16.items()}))
    return variants


def _in_float16_words(got, g16, scale, lr):
    """Which float16 rounding reproduces the student's step; both words when they give the same numbers (an
    lr of 1 rounds nothing more)."""
    variants = _in_float16(g16, scale, lr)
    off = [max(float(np.max(np.abs(got[n] - v[n].astype(np.float64)))) for n in SHAPES) for _, v in variants]
    best = int(np.argmin(off))
    if best < 2 and off[0] == off[1]:
        return ("they were rounded to float16 after the loss scale came off (unscaled in float16, or the update "
                "lr * grad computed in float16), where values below 6.1e-05 lose precision and below 6e-08 underflow "
                "to 0; cast the gradients to float32 first, divide by loss_scale, and update in float32")
    return variants[best][0]


def _rounded_in_float16(got, want, g16, scale, lr):
    """The words of the float16 rounding that reproduces the student's step (ten times closer than the reference's
    float32 step is), or None."""
    err = max(float(np.max(np.abs(got[n] - want[n]))) for n in SHAPES)
    off = [max(float(np.max(np.abs(got[n] - v[n].astype(np.float64)))) for n in SHAPES)
           for _, v in _in_float16(g16, scale, lr)]
    return _in_float16_words(got, g16, scale, lr) if min(off) <= err / 10 else None


def _update_cause(what, scale, got, want, g16, lr):
    g = np.concatenate([got[n].ravel() for n in SHAPES])
    w = np.concatenate([want[n].ravel() for n in SHAPES])
    ww = float(w @ w)
    c = float(g @ w) / ww if ww else 0.0
    proportional = ww and np.allclose(g, c * w, rtol=1e-3, atol=1e-3 * float(np.abs(w).max()))
    if proportional and abs(c - scale) <= 1e-3 * scale:
        return (f"the update is {c:g} x the reference's, the loss scale: divide the float16 gradients by loss_scale "
                "(in float32) before the update; they are gradients of loss * loss_scale")
    if proportional and abs(c * scale - 1) <= 1e-3:
        return "the update is 1/loss_scale of the reference's: the gradients are divided by loss_scale twice"
    if proportional and lr != 1 and abs(c * lr - 1) <= 1e-3:
        return (f"the update is {c:.4g} x the reference's, 1/lr (cfg.lr = {lr:g}): the learning rate is left out; "
                "master -= lr * grad, with grad the unscaled float32 gradient")
    if what.startswith("small"):
        zeros = int(np.sum((g == 0) & (w != 0)))
        words = _in_float16_words(got, g16, scale, lr)
        return (f"gradients of about 1e-7 came out wrong ({zeros} of {w.size} became 0; worst relative error "
                f"{float(np.max(np.abs(g - w)) / np.abs(w).max()):.2g}): {words}")
    rounded = _rounded_in_float16(got, want, g16, scale, lr)
    if rounded:
        return (f"the update is off by up to {float(np.max(np.abs(g - w)) / np.abs(w).max()):.2g} of its size, "
                f"as float16 rounds: {rounded}")
    if proportional and abs(c - 1) <= 1e-3:
        return (f"the update is off by up to {float(np.max(np.abs(g - w)) / np.abs(w).max()):.2g} of its size, more "
                "than float32's rounding: is part of it computed in float16 (the lr, or lr * grad)? keep the update "
                "in float32: master -= lr * grad32")
    if proportional:
        return f"the update is {c:.4g} x the reference's -lr * half_grad.astype(float32) / loss_scale"
    return (f"the update differs from the reference's -lr * half_grad.astype(float32) / loss_scale (largest "
            f"difference {float(np.max(np.abs(g - w))):.3g}, reference size {float(np.max(np.abs(w))):.3g})")


def _fail_scale(kind, mode, cfg, k, steps, got, want, rows, scales):
    last = steps[k - 1][0] if k >= 1 else None
    if k == 0:
        cause = f"the initial loss scale must be cfg.loss_scale = {cfg.loss_scale:g}"
    elif mode == "static":
        cause = "static loss scaling never changes the scale (not on overflow, not after good steps)"
    elif last in ("inf", "NaN"):
        cause = "dynamic loss scaling halves the scale after an overflow (an inf or NaN gradient)"
    else:
        cause = (f"dynamic loss scaling doubles the scale after growth_interval = {cfg.growth_interval} good steps "
                 "in a row (counted since the last overflow or growth), and otherwise keeps it")
    after = f"after step {k} ({last} gradients)" if k else "before the first step"
    raise CheckFailure(f"{kind.name}: {mode} loss scaling: loss_scale {after} is {got:g}, the reference's {want:g}: "
                       f"{cause}", {"step": k, "loss_scale": got},
                       {"views": [table("loss scaling, step by step", rows)]})


def conversions(subject, rng):
    """The articles' to_half_precision / to_full_precision, on a dict of mixed arrays."""
    kind = subject.kind
    obj = subject.build()
    params = {"w": rng.standard_normal((3, 4)).astype(np.float32), "ids": rng.integers(0, 9, size=(2, 3)),
              "stats": rng.standard_normal(4)}
    before = {k: v.copy() for k, v in params.items()}
    half = subject.method(obj, "to_half_precision", params)
    _dict_of_arrays(half, params, "to_half_precision(params)")
    for k, v in params.items():
        if v.dtype != before[k].dtype or not np.array_equal(v, before[k]):
            raise CheckFailure(f"{kind.name}: to_half_precision changed the caller's {k!r} in place; return converted "
                               "copies (the float32 master weights must survive)")
    if half["w"].dtype != np.float16 or not np.array_equal(half["w"], params["w"].astype(np.float16)):
        raise CheckFailure(f"{kind.name}: to_half_precision turned a float32 array into {half['w'].dtype}; it must "
                           "be v.astype(np.float16)")
    for k, what, why in (("ids", "integer token ids", "float16 ids above 2048 are no longer exact integers"),
                         ("stats", "a float64 array", "test v.dtype == np.float32, not a float kind: float64 arrays "
                                                      "such as running statistics keep their precision")):
        if half[k].dtype != params[k].dtype or not np.array_equal(half[k], params[k]):
            raise CheckFailure(f"{kind.name}: to_half_precision converted {what} ({k!r}, {params[k].dtype}) to "
                               f"{half[k].dtype}; as in the articles only float32 arrays become float16 ({why})")
    full = subject.method(obj, "to_full_precision", half)
    _dict_of_arrays(full, half, "to_full_precision(params)")
    if full["w"].dtype != np.float32 or not np.array_equal(full["w"], half["w"].astype(np.float32)):
        raise CheckFailure(f"{kind.name}: to_full_precision turned a float16 array into {full['w'].dtype}; it must "
                           "be v.astype(np.float32)")
    for k in ("ids", "stats"):
        if full[k].dtype != half[k].dtype or not np.array_equal(full[k], half[k]):
            raise CheckFailure(f"{kind.name}: to_full_precision converted {k!r} ({half[k].dtype}); only float16 "
                               "arrays become float32")


def _dict_of_arrays(got, like, what):
    if not isinstance(got, dict) or set(got) != set(like):
        raise StudentError(f"{what} returned {describe(got)}; it must return a dict with the same keys")
    for k, v in got.items():
        if not isinstance(v, np.ndarray) or v.shape != like[k].shape:
            raise StudentError(f"{what} returned {describe(v)} for {k!r}; expected an array of shape {like[k].shape}")
