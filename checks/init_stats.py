"""`init_stats`: weight initialisers draw from the right distribution. For each
scheme (Xavier/Glorot and He, uniform and normal) one large draw of shape
(fan_in, fan_out) = SHAPE is tested (gradlab.numerics.stats, scipy's distributions) for

1. its mean (z-test against 0, with the scheme's own standard deviation),
2. its variance (z-test of the sample variance, with the distribution's fourth moment),
3. its distribution (Kolmogorov-Smirnov against the uniform or normal of that variance);
and that the entries are draws of their own (no value repeated, as from a row tiled) and a
second call draws anew (no generator seeded inside the function).

Each test rejects at ALPHA = 1e-4, so 4 schemes x 3 tests = 12 tests give a false alarm
in at most 12 * 1e-4 = 0.12% of runs (Bonferroni). SHAPE is not square, so the He
variance with fan_in and fan_out swapped is 1/4 of the right one, which no test misses.
A variance that matches a known slip (fans swapped, the factor 2 missing, the uniform's
bound used as a std...) is named."""
import numpy as np

from gradlab.contract.errors import CheckFailure
from gradlab.contract.kinds import INITIALIZER
from gradlab.contract.records import table
from gradlab.contract.suite import Outcome, check
from gradlab.execution.calls import call_init
from gradlab.numerics.stats import ks_test, normal_two_sided

ALPHA = 1e-4
SHAPE = (64, 256)        # (fan_in, fan_out) for x @ W: 16,384 draws per scheme
SCHEMES = {              # name -> (distribution, variance(fan_in, fan_out), formula in words)
    "xavier_uniform": ("uniform", lambda fi, fo: 2 / (fi + fo), "U(-a, a), a = sqrt(6 / (fan_in + fan_out))"),
    "xavier_normal": ("normal", lambda fi, fo: 2 / (fi + fo), "N(0, 2 / (fan_in + fan_out))"),
    "he_uniform": ("uniform", lambda fi, fo: 2 / fi, "U(-a, a), a = sqrt(6 / fan_in)"),
    "he_normal": ("normal", lambda fi, fo: 2 / fi, "N(0, 2 / fan_in)"),
}
KURTOSIS = {"uniform": 1.8, "normal": 3.0}   # E[x^4] / var^2: the sample variance's spread


def _slips(scheme, fi, fo):
    """(the variance a known slip gives, its cause in words)."""
    dist, variance, _ = SCHEMES[scheme]
    var = variance(fi, fo)
    he = scheme.startswith("he")
    slips = [
        (variance(fo, fi), "fan_in and fan_out are swapped: for a weight used as x @ W of shape "
                           "(fan_in, fan_out), fan_in = shape[0] and fan_out = shape[1]") if he else None,
        (var / 2, "the factor 2 is missing (that is LeCun's 1/fan_in" + ("" if he else " for Xavier's average") + ")"),
        (1 / fi if not he else None, "Xavier uses fan_in alone; it is 2 / (fan_in + fan_out)"),
        (2 / fi if not he else None, "Xavier uses 2 / fan_in (that is He); it is 2 / (fan_in + fan_out)"),
        (2 / (fi + fo) if he else None, "He uses fan_in + fan_out (that is Xavier); it is 2 / fan_in"),
        (var * var, "the variance is used as the standard deviation (the sqrt is missing)"),
    ]
    if dist == "uniform":
        slips += [(var / 3, "the bound a is the standard deviation; a uniform U(-a, a) has variance a**2 / 3, "
                            "so a = sqrt(3 * variance)"),
                  (var * 4, "the values are drawn on [-2a, 2a] (e.g. rng.uniform(-a, a) * 2 or a * (2 * u - 1) "
                            "with u already in [-1, 1])")]
    else:
        slips += [(3 * var, "the uniform bound sqrt(6 / fan) is used as the normal's standard deviation; the std "
                            "is sqrt(2 / fan)")]
    return [s for s in slips if s is not None and s[0] is not None]


def _independent_draws(name, where, w, again):
    """Every entry a draw of its own: a continuous distribution repeats no value (float32 may, rarely), and
    a second call draws anew (a generator seeded inside the function gives every layer the same weights)."""
    distinct = np.unique(w).size
    if distinct < 0.9 * w.size:
        raise CheckFailure(f"{name}: {where}: only {distinct} distinct values among {w.size}: the draws repeat (a "
                           "row or block drawn once and tiled, or one draw broadcast), so the weights are "
                           "correlated; draw every entry: rng.uniform(-a, a, size=shape) or "
                           "rng.normal(0, std, size=shape)", {"distinct": distinct})
    if np.array_equal(w, again):
        raise CheckFailure(f"{name}: {where}: two calls returned the same values, so every layer of a shape would "
                           "start with the same weights: draw from the rng given (or from one generator made once, "
                           "outside the function), not from a generator seeded inside each call",
                           {"repeated_call": True})


def _shape_words(w, dist):
    """What the values look like instead, from their kurtosis (E[x^4] / var^2: uniform 1.8, normal 3) and how
    far they reach (a normal's 16,384 draws reach ~4 standard deviations)."""
    x = w.astype(np.float64).reshape(-1)
    x = x - x.mean()
    std = float(np.sqrt(np.mean(x * x)))
    kurtosis, reach = float(np.mean(x ** 4)) / std ** 4, float(np.abs(x).max()) / std
    if dist == "normal" and abs(kurtosis - KURTOSIS["uniform"]) < 0.15:
        return "a uniform draw for a normal scheme?"
    if dist == "uniform" and abs(kurtosis - KURTOSIS["normal"]) < 0.3:
        return "a normal draw for a uniform scheme?"
    if dist == "normal" and reach < 3:
        return (f"they stop at {reach:.2g} standard deviations, where a normal's reach ~4: a truncated normal "
                "(values beyond a bound redrawn or clipped)? the scheme is the plain normal N(0, variance)")
    return f"their kurtosis is {kurtosis:.3g} ({dist}'s is {KURTOSIS[dist]:g})"


def _tests(w, dist, var):
    """(p-values of the mean, variance and distribution tests, sample mean, sample variance)."""
    x = w.astype(np.float64).reshape(-1)
    n = x.size
    mean, s2 = float(x.mean()), float(x.var())
    p_mean = normal_two_sided(mean / np.sqrt(var / n))
    p_var = normal_two_sided((s2 - var) / np.sqrt((KURTOSIS[dist] - 1) * var * var / n))
    if dist == "uniform":
        a = np.sqrt(3 * var)
        _, p_dist = ks_test(x, lambda v: np.clip((v + a) / (2 * a), 0, 1))
    else:
        from scipy.special import ndtr
        _, p_dist = ks_test(x, lambda v: ndtr(v / np.sqrt(var)))
    return p_mean, p_var, p_dist, mean, s2


@check("init_stats", needs={INITIALIZER}, order=20,
       summary="Xavier/He, uniform/normal: shape, mean, variance and distribution by statistical tests "
               "(scipy, false-alarm rate 0.12% per run)")
def init_stats(subject, rng):
    name = subject.kind.name
    fi, fo = SHAPE
    rows = []
    for scheme, (dist, variance, formula) in SCHEMES.items():
        var = variance(fi, fo)
        call_init(subject, (3, 5), scheme, rng)            # shape only, a small non-square one
        w = call_init(subject, SHAPE, scheme, rng)
        where = f"{name}({SHAPE}, {scheme!r}) (fan_in={fi}, fan_out={fo}, {formula})"
        _independent_draws(name, where, w, call_init(subject, SHAPE, scheme, rng))
        p_mean, p_var, p_dist, mean, s2 = _tests(w, dist, var)
        rows.append({"scheme": scheme, "mean": mean, "variance": s2, "expected variance": var,
                     "p(mean)": p_mean, "p(variance)": p_var, "p(distribution)": p_dist,
                     "ok": min(p_mean, p_var, p_dist) >= ALPHA})
        view = table(f"{name}: one draw of shape {SHAPE} per scheme (reject below p = {ALPHA:g})", rows)
        metrics = {"scheme": scheme, "alpha": ALPHA, "tests": 3 * len(SCHEMES), "variance": s2, "expected": var}
        if p_var < ALPHA:
            ratio = s2 / var
            # a slip is named when its variance explains the sample within 5 standard errors
            se = np.sqrt((KURTOSIS[dist] - 1) / w.size)
            named = [cause for v, cause in _slips(scheme, fi, fo) if abs(np.log(s2 / v)) <= 5 * se + 1e-3]
            raise CheckFailure(
                f"{name}: {where}: variance {s2:.4g}, expected {var:.4g} ({ratio:.3g}x; p = {p_var:.1e} < {ALPHA:g})"
                + (f"; likely cause: {named[0]}" if named else ""), metrics, {"views": [view]})
        if p_mean < ALPHA:
            raise CheckFailure(f"{name}: {where}: mean {mean:.4g}, expected 0 (p = {p_mean:.1e} < {ALPHA:g}): "
                               "the values must be centred on 0 (rng.uniform(-a, a), not rng.uniform(0, a) "
                               "or rng.random() * a)", metrics, {"views": [view]})
        if p_dist < ALPHA:
            raise CheckFailure(f"{name}: {where}: mean and variance are right but the values are not {dist} "
                               f"(Kolmogorov-Smirnov p = {p_dist:.1e} < {ALPHA:g}): {_shape_words(w, dist)}",
                               metrics, {"views": [view]})
    return Outcome(f"{len(SCHEMES)} schemes: shape, mean, variance and distribution pass (12 tests at "
                   f"alpha = {ALPHA:g} each: a false alarm in at most 0.12% of runs)",
                   {"alpha": ALPHA, "tests": 3 * len(SCHEMES), "draws": fi * fo},
                   {"views": [table(f"{name}: one draw of shape {SHAPE} per scheme", rows)]})
