"""`table`: a sinusoidal positional encoding equals the formula of "Attention Is
All You Need": PE[pos, 2i] = sin(pos / 10000**(2i/d_model)), PE[pos, 2i+1] = cos
of the same angle, at cfg's (max_len, d_model) and at an odd d_model (whose last
column is a sin with no cos partner). When it differs, the common slips are
computed too and the one that reproduces the student's table is named."""
import numpy as np

from gradlab.contract.errors import CheckFailure, StudentError
from gradlab.contract.kinds import POSITION_TABLE
from gradlab.contract.records import heatmap, table
from gradlab.contract.suite import Outcome, check
from gradlab.execution.calls import call_table
from gradlab.numerics.tolerance import computed_eps, eps_of, tolerance



def _table(L, D, exponent, use_sin, pos0=0, divide=True):
    """A table from per-column rules: angle = pos / 10000**exponent(col), sin where use_sin(col)."""
    pos = np.arange(pos0, L + pos0, dtype=np.float64)[:, None]
    cols = np.arange(D)
    freq = 10000.0 ** exponent(cols, D)
    angle = pos / freq if divide else pos * freq
    return np.where(use_sin(cols, D), np.sin(angle), np.cos(angle))


def _pair(cols, D):                      # the 2i shared by columns 2i and 2i+1
    return (cols - cols % 2) / D


def _even(cols, D):
    return cols % 2 == 0


def expected(L, D):
    return _table(L, D, _pair, _even)


ANGLE_ULPS = 8      # the angle's rounding, in units of the precision the table was computed in


def _allowed(got, L, D):
    """Per entry: the forward tolerance of an entry in [-1, 1], plus what rounding the angle costs. A table
    computed in float32 rounds pos / 10000**(2i/d) to ~6e-8 of itself (the frequency through exp/log, the
    PyTorch tutorial's form, by some ulps more), so its sin and cos move by that times the angle: 3e-5 at
    position 500, beyond a fixed tolerance of 1e-5; in float64 the term is ~1e-13."""
    eps = max(eps_of(got.dtype), computed_eps([got]) if got.dtype == np.float64 else 0.0)
    angle = np.arange(L, dtype=np.float64)[:, None] / 10000.0 ** _pair(np.arange(D), D)
    return tolerance("forward", got).allowed(1.0) + ANGLE_ULPS * eps * angle


def _halves(L, D):
    """[sin | cos]: the first ceil(D/2) columns sin, the rest cos, frequencies 2i/D in each half."""
    h = (D + 1) // 2
    cols = np.arange(D)
    i = np.where(cols < h, cols, cols - h)
    angle = np.arange(L, dtype=np.float64)[:, None] / 10000.0 ** (2 * i / D)
    return np.where(cols < h, np.sin(angle), np.cos(angle))


VARIANTS = [
    ("sin and cos are concatenated halves ([sin | cos], as in some codebases) instead of interleaved: "
     "sin on the even columns (pe[:, 0::2]), cos on the odd ones (pe[:, 1::2])", _halves),
    ("sin and cos are swapped: sin goes on the even columns (pe[:, 0::2]) and cos on the odd ones",
     lambda L, D: _table(L, D, _pair, lambda c, d: c % 2 == 1)),
    ("the exponent doubles 2i: with i = np.arange(0, d_model, 2) already even, 10000 ** (2 * i / d_model) is "
     "10000 ** (4i/d_model); write 10000 ** (i / d_model) for that i (or 2i/d_model with i = 0, 1, 2, ...)",
     lambda L, D: _table(L, D, lambda c, d: 2 * _pair(c, d), _even)),
    ("every column has its own frequency (exponent col/d_model): the cos column 2i+1 must share the angle of "
     "the sin column 2i, 10000 ** (2i/d_model), not use (2i+1)/d_model",
     lambda L, D: _table(L, D, lambda c, d: c / d, _even)),
    ("positions start at 1; the first row is position 0 (sin 0 = 0, cos 0 = 1)",
     lambda L, D: _table(L, D, _pair, _even, pos0=1)),
    ("the angle multiplies by 10000 ** (2i/d_model) instead of dividing (the sign of the exponent in "
     "exp(2i * -log(10000) / d_model) is lost)", lambda L, D: _table(L, D, _pair, _even, divide=False)),
]


def _explain(got, L, D, allowed):
    """The slip whose table the student's matches, entry by entry within `allowed` (the per-entry allowance:
    its largest value, 4 at a float16 table's far end, made every slip match)."""
    for hint, fn in VARIANTS:
        want = fn(L, D)
        if want.shape == got.shape and bool(np.all(np.abs(got - want) <= allowed)):
            return hint
    return None


@check("table", needs={POSITION_TABLE}, order=20,
       summary="the sinusoidal table equals sin/cos(pos / 10000**(2i/d_model)), interleaved; also for an odd d_model")
def table_check(subject, rng):
    cfg = subject.cfg
    L, D = cfg.max_len, cfg.d_model
    odd = D + 1 if D % 2 == 0 else D + 2
    rows = []
    for d in (D, odd):
        try:
            got = call_table(subject, L, d)
        except StudentError as e:
            if d == odd:
                raise CheckFailure(
                    f"{subject.kind.name}: with an odd d_model={d} it fails: {e}. An odd d_model has ceil(d/2) sin "
                    f"columns and floor(d/2) cos columns: pe[:, 1::2] = np.cos(angle[:, :d_model // 2])",
                    {"d_model": d}) from None
            raise
        want = expected(L, d)
        allowed = _allowed(got, L, d)                    # every entry is in [-1, 1]
        tol = float(allowed.max())
        err = np.abs(got.astype(np.float64) - want)
        over = err / allowed
        worst = tuple(int(i) for i in np.unravel_index(int(np.argmax(over)), err.shape))
        rows.append({"max_len": L, "d_model": d, "max_error": float(err.max()), "tolerance": tol,
                     "ok": bool(over.max() <= 1)})
        if over.max() > 1:
            hint = _explain(got.astype(np.float64), L, d, allowed)
            pos, col = worst
            raise CheckFailure(
                f"{subject.kind.name}: the table for max_len={L}, d_model={d} differs at position {pos}, column "
                f"{col}: got {got[worst]:.6g}, expected {want[worst]:.6g} = "
                f"{'sin' if col % 2 == 0 else 'cos'}({pos} / 10000**({col - col % 2}/{d}))"
                + (f"; likely cause: {hint}" if hint else ""),
                {"max_error": float(err.max()), "tolerance": tol, "d_model": d},
                {"views": [heatmap(f"|yours - expected|, d_model={d}", err.tolist(), xlabel="column",
                                   ylabel="position")]})
    return Outcome(f"the tables for d_model={D} and the odd d_model={odd} (max_len={L}) equal the formula",
                   {"max_error": max(r["max_error"] for r in rows)}, {"views": [table("tables checked", rows)]})
