"""`dropout`: inverted dropout, judged while training (every other check runs
it with training=False, where it must be the identity).

With x nonzero everywhere, forward(x, training=True)'s zeros are the dropped
entries, so the mask is visible from the output. Checked:
1. training=False and p = 0: the identity, forward and backward;
2. kept entries are x / (1 - p) (inverted scaling), dropped ones exactly 0;
3. backward reuses forward's mask: dx = g * mask / (1 - p);
4. each entry is dropped on its own (not one draw shared along the batch, position or
   feature axis: a binomial test per axis of how often neighbouring entries agree), and
   the expectation is preserved: a z-test of mean(out / x) = 1, and a binomial test
   of the number kept (1 - p of them), at p = 0.3 and at p = 0.9 (close to 1);
   ALPHA = 1e-4 per expectation test (4 of them), ALPHA_SHARED = 1e-7 per axis (6): a
   false alarm in at most 0.04% of runs;
5. two training calls draw different masks.
"""
import numpy as np

from gradlab.contract.errors import CheckFailure
from gradlab.contract.kinds import STOCHASTIC
from gradlab.contract.numbers import distinct
from gradlab.contract.records import table
from gradlab.contract.suite import Outcome, check
from gradlab.numerics.stats import binomial_two_sided, normal_two_sided
from gradlab.numerics.tolerance import tolerance

ALPHA = 1e-4
# a mask shared along an axis makes every pair agree (z ~ 90 at these sizes): this test can afford a far
# smaller false-alarm rate than the expectation's, whose bugs are subtler
ALPHA_SHARED = 1e-7
P_MID, P_HIGH = 0.3, 0.9
SIZES = {"batch_size": 4, "seq_len": 64, "max_len": 64, "d_model": 64, "num_heads": 1}   # 16,384 entries per call


def _subject(subject, p):
    cfg = subject.cfg.replace(dropout=p, **SIZES)
    return subject.with_cfg(cfg)


def _input(s, rng):
    """x with |x| in [0.5, 2.5): no entry is 0, so a 0 in the output is a dropped entry."""
    shape = s.kind.input_shape(s.cfg)
    x = (0.5 + 2 * rng.random(shape)) * rng.choice([-1.0, 1.0], size=shape)
    return x.astype(s.cfg.np_dtype)


def _tol(dtype):
    """One multiplication's rounding: the "repeat" row of gradlab.numerics.tolerance."""
    return tolerance("repeat", np.dtype(dtype)).rtol


def _identity(kind, s, rng, training, label):
    module = s.build()
    x, g = _input(s, rng), _input(s, rng)
    if not training:
        # a training call first: an evaluation forward must not leave its mask for the backward that follows
        s.forward(module, x.copy(), True)
    out = s.forward(module, x.copy(), training)
    (dx,) = s.backward(module, g.copy())
    for what, got, want in (("forward", out, x), ("backward", dx, g)):
        if not np.allclose(got, want, rtol=_tol(got.dtype), atol=0):
            k = int(np.argmax(np.abs(got.astype(np.float64) - want)))
            raise CheckFailure(
                f"{kind.name}: {label}: {what} must be the identity, but entry {k} is {float(got.flat[k]):.6g}, "
                f"not {float(want.flat[k]):.6g}; {_identity_hint(what, got, training)}",
                {"case": label})


def _identity_hint(what, got, training):
    """Why forward or backward is not the identity (evaluation, or p = 0 while training). Backward is judged
    after forward passed: there, the forward was the identity."""
    if not training and what == "backward":
        return ("the evaluation forward returned x, but backward still applies the mask of the training call before "
                "it: clear it (self.mask = None, or ones) when training is False")
    if not training:
        return ("dropout only drops (and scales) while training: return x unchanged when training is False "
                "(inverted dropout needs no rescaling at evaluation)")
    if what == "forward" and not got.any():
        return "every entry was dropped at p = 0: p is used as the probability of keeping an entry; it is the " \
               "probability of dropping one"
    dropped = float(np.mean(got == 0))
    if what == "forward" and dropped > 0:
        return (f"{dropped:.0%} of the entries were dropped at p = 0 (cfg.dropout = 0): does build(cfg) pass "
                "cfg.dropout to the module, or is p fixed inside it? With p = 0 nothing is dropped and 1/(1-p) = 1")
    return "with p = 0 nothing is dropped and 1/(1-p) = 1"


def _training(kind, s, p, rng, rows):
    module = s.build()
    x = _input(s, rng)
    out = s.forward(module, x.copy(), True).astype(np.float64)
    ratio = out / x.astype(np.float64)                 # 0 where dropped, 1/(1-p) where kept
    kept = out != 0
    n, k = out.size, int(kept.sum())
    scale = 1 / (1 - p)
    tol = max(_tol(out.dtype), _tol(s.cfg.np_dtype)) * 10
    # a mask or scale kept in float32 (1/(1-p) rounded to it) is float32 arithmetic inside, judged as float32
    # (CONTRACT §6): as sound as the exact scale
    rounded = float(np.float32(scale))
    if k and not np.allclose(ratio[kept], scale, rtol=tol, atol=0) and \
            not np.allclose(ratio[kept], rounded, rtol=_tol(np.dtype(np.float64)) * 10, atol=0):
        r = float(np.median(ratio[kept]))
        why = ("kept entries are not scaled: inverted dropout multiplies them by 1/(1-p) while training, so "
               "the expectation stays x" if abs(r - 1) < 1e-6 else
               "kept entries are scaled by (1-p) instead of 1/(1-p)" if abs(r - (1 - p)) < 1e-6 else
               _scale_words(r, scale, ratio[kept]))
        raise CheckFailure(f"{kind.name}: p={p}, training=True: {why}", {"p": p, "scale": r})
    _independent(kind, kept, p, rows)
    # the expectation: mean(out / x) = 1 (each ratio is 0 or 1/(1-p): mean 1, variance p/(1-p))
    z = (float(ratio.mean()) - 1) / np.sqrt(p / (1 - p) / n)
    p_mean = normal_two_sided(z)
    p_kept = binomial_two_sided(k, n, 1 - p)
    rows.append({"p": p, "entries": n, "kept": k, "expected kept": round(n * (1 - p)), "mean(out / x)":
                 float(ratio.mean()), "p(expectation)": p_mean, "p(kept count)": p_kept,
                 "ok": min(p_mean, p_kept) >= ALPHA})
    if min(p_mean, p_kept) < ALPHA:
        frac = k / n
        why = ("p is used as the probability of keeping an entry; it is the probability of dropping one "
               "(keep = rng.random(x.shape) >= p, or < 1 - p)" if abs(frac - p) < 0.02 else
               f"{frac:.4f} of the entries are kept, expected 1 - p = {1 - p:.4f}")
        raise CheckFailure(
            f"{kind.name}: p={p}, training=True: the expectation of the output is {float(ratio.mean()):.4f} x the "
            f"input, not x (z-test p = {p_mean:.1e}, kept-count binomial test p = {p_kept:.1e}, rejecting below "
            f"{ALPHA:g}): {why}", {"p": p, "kept_fraction": frac}, {"views": [table("dropout statistics", rows)]})
    # backward reuses forward's mask
    g = _input(s, rng)
    (dx,) = s.backward(module, g.copy())
    want = g.astype(np.float64) * ratio
    if not np.allclose(dx, want, rtol=tol, atol=0):
        zeros_match = np.array_equal(dx == 0, ~kept)
        why = ("backward draws a new mask: reuse the one forward kept (self.mask)" if not zeros_match and
               np.count_nonzero(dx == 0) else
               "backward ignores the mask (dx = g): multiply by the mask forward kept" if np.allclose(dx, g) else
               "backward uses forward's mask but not its 1/(1-p) scaling" if np.allclose(dx, g * kept) else
               "backward scales by 1/(1-p) twice (dx = g * mask / (1-p)**2): scale once, dx = g * keep / (1 - p), "
               "or g * mask when forward's mask already holds the 1/(1-p)" if np.allclose(dx, want / (1 - p), rtol=tol, atol=0) else
               "dx is not g * mask / (1 - p)")
        raise CheckFailure(f"{kind.name}: p={p}, training=True: {why}", {"p": p})
    again = s.forward(module, x.copy(), True)
    if np.array_equal(again != 0, kept):
        raise CheckFailure(f"{kind.name}: p={p}: two training calls dropped exactly the same {n - k} entries: the "
                           "mask must be drawn anew on every forward (is the random generator reseeded inside "
                           "forward?)", {"p": p})


AXES = ("batch", "position", "feature")


def _scale_words(r, scale, ratios):
    """'kept entries are x times r, not 1/(1-p)', with as many digits as tell the two apart, and the likely
    cause when r is 1/(1-p) rounded to float16 (a mask or a scale kept in float16)."""
    shown, wanted = distinct(r, scale)
    words = f"kept entries are x times {shown}, not 1/(1-p) = {wanted} ({abs(r / scale - 1):.1e} off)"
    if np.allclose(ratios, float(np.float16(scale)), rtol=1e-6, atol=0):
        return words + ": 1/(1-p) rounded to float16 (a mask or scale kept in float16); compute it in float32 at least"
    return words


def _independent(kind, kept, p, rows):
    """Each entry is dropped on its own: along every axis, disjoint neighbouring pairs (entries 0 and 1, 2 and
    3, ...) agree (both kept or both dropped) with probability p**2 + (1-p)**2, a binomial test each. A mask
    drawn for a smaller shape and broadcast (one per token, shape (B, T, 1); one for the whole batch,
    x.shape[1:]) makes every pair along that axis agree: the expectation is right, the drops are not
    independent."""
    agree_p = p * p + (1 - p) * (1 - p)
    found = []
    for axis, name in enumerate(AXES[-kept.ndim:]):
        half = kept.shape[axis] // 2
        if half == 0:
            continue
        first = np.take(kept, np.arange(0, 2 * half, 2), axis=axis)
        second = np.take(kept, np.arange(1, 2 * half, 2), axis=axis)
        n, agree = first.size, int(np.sum(first == second))
        p_value = binomial_two_sided(agree, n, agree_p)
        if p_value < ALPHA_SHARED and agree > n * agree_p:
            found.append((agree / n, name, n, agree, p_value))
    if found:
        # the axis the draw is shared along agrees most (a mask per token repeats each token's state D times,
        # which also spreads the pair counts along the other axes beyond the binomial's)
        _, name, n, agree, p_value = max(found)
        rows.append({"p": p, "axis": name, "pairs": n, "agreeing": agree, "expected": round(n * agree_p),
                     "p(independent)": p_value, "ok": False})
        shared = ("the whole " + name + " axis shares one draw" if agree == n else
                  f"neighbouring entries along the {name} axis are dropped together")
        raise CheckFailure(
            f"{kind.name}: p={p}, training=True: {shared} ({agree} of {n} neighbouring pairs along the {name} "
            f"axis are both kept or both dropped, expected about {n * agree_p:.0f}; binomial test p = "
            f"{p_value:.1e}, rejecting below {ALPHA_SHARED:g}): each entry must be dropped on its own; draw the mask "
            "for the whole input, rng.random(x.shape) < 1 - p, not for a smaller shape broadcast over "
            f"the {name} axis", {"p": p, "axis": name}, {"views": [table("dropout statistics", rows)]})


@check("dropout", needs={STOCHASTIC}, order=8,
       summary="training=False and p=0 are the identity; inverted scaling 1/(1-p); backward reuses the mask; "
               "entries are dropped independently and the expectation is preserved (scipy, false-alarm rate 0.04% "
               "per run)")
def dropout(subject, rng):
    kind = subject.kind
    _identity(kind, _subject(subject, P_MID), rng, False, "training=False")
    _identity(kind, _subject(subject, 0.0), rng, True, "p=0, training=True")
    rows = []
    for p in (P_MID, P_HIGH):
        _training(kind, _subject(subject, p), p, rng, rows)
    return Outcome(f"training=False and p=0 are the identity; at p={P_MID} and p={P_HIGH} kept entries are scaled "
                   "by 1/(1-p), backward reuses the mask, entries are dropped independently along every axis, and "
                   f"the expectation is preserved (4 tests at alpha = {ALPHA:g}, 6 at {ALPHA_SHARED:g}: a false "
                   "alarm in at most 0.04% of runs)", {"alpha": ALPHA, "tests": 10},
                   {"views": [table("dropout statistics", rows)]})
