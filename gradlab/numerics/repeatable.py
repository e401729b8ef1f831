"""The precondition of every check that compares numbers: the student's code,
called twice on the same input, gives the same output. When it does not (dropout
left on, np.random in forward, state carried between calls) no comparison of its
numbers means anything, and the check says "cannot judge" instead of a verdict."""
import numpy as np

from gradlab.contract.errors import CannotJudge
from gradlab.contract.numbers import distinct
from gradlab.numerics.tolerance import tolerance

WHY = ("Is dropout left on (forward must not drop anything unless asked to train: default training=False), "
       "or does forward draw random numbers or keep state between calls?")


def difference(first, second, tol):
    """(index, a, b, max |a - b|) where two runs differ beyond tol (a Tol, relative to the
    larger run's largest entry), or None. NaN equals NaN at the same place."""
    a, b = np.asarray(first, dtype=np.float64), np.asarray(second, dtype=np.float64)
    if a.shape != b.shape:
        return (), float("nan"), float("nan"), float("inf")
    with np.errstate(invalid="ignore"):
        diff = np.where((a == b) | (np.isnan(a) & np.isnan(b)), 0.0, np.abs(a - b))
    diff[np.isnan(diff)] = np.inf
    finite = np.isfinite(a) & np.isfinite(b)
    scale = max(float(np.abs(a[finite]).max(initial=0.0)), float(np.abs(b[finite]).max(initial=0.0)), 1e-30)
    if diff.size == 0 or float(diff.max()) <= tol.allowed(scale):
        return None
    k = int(np.argmax(diff))
    return tuple(int(i) for i in np.unravel_index(k, diff.shape)), float(a.flat[k]), float(b.flat[k]), \
        float(diff.max())


def require_repeatable(what, first, second, judged):
    """Raise CannotJudge when two calls on the same input disagree. `what`: e.g. "forward";
    `judged`: what the check would have judged, e.g. "the gradient"."""
    if type(first) is type(second) is np.ndarray and first.dtype == second.dtype and \
            first.shape == second.shape and first.tobytes() == second.tobytes():
        return         # the same bits: nothing to measure
    tol = tolerance("repeat", first, second)
    found = difference(first, second, tol)
    if found is None:
        return
    index, a, b, worst = found
    ta, tb = distinct(a, b)
    raise CannotJudge(f"{what} is not repeatable: the same input gave {ta} then {tb} at index {index} "
                      f"(max difference {worst:.3g}), so {judged} cannot be judged. {WHY}")
