"""The numerical engine: finite differences of a scalar objective with
respect to arrays that are perturbed in place and always restored.

f() evaluates the scalarised objective (e.g. sum(forward(x) * g)) from the
*current* contents of the arrays; the engine only ever writes into them.
"""
import contextlib
from dataclasses import dataclass

import numpy as np


@dataclass
class Tensor:
    """One thing we differentiate with respect to."""
    name: str                 # "x" for the input, else the dotted parameter name
    array: np.ndarray         # the live array (the student's own for parameters)
    analytical: np.ndarray    # the student's gradient, copied before any perturbation


@contextlib.contextmanager
def perturbed(array, index, delta):
    """array[index] += delta for the duration of the block, restored exactly."""
    old = array[index].copy()
    array[index] = old + delta
    try:
        yield
    finally:
        array[index] = old


def step_size(array, index, rel=1e-6):
    """Central-difference step: relative to the value, never below `rel`."""
    return rel * max(1.0, float(abs(array[index])))


def central_difference(f, array, index, h):
    with perturbed(array, index, h):
        plus = f()
    with perturbed(array, index, -h):
        minus = f()
    return (plus - minus) / (2 * h)


def elementwise_gradient(f, array, rel=1e-6):
    """The naive loop, one pair of evaluations per element (2 * size calls)."""
    grad = np.zeros(array.shape, dtype=np.float64)
    for index in np.ndindex(array.shape):
        grad[index] = central_difference(f, array, index, step_size(array, index, rel))
    return grad


@dataclass
class Comparison:
    name: str
    max_abs_err: float
    max_rel_err: float     # |a - n| / scale, the number judged
    tolerance: float
    worst: list            # [(index tuple, analytical, numerical)], worst first
    scale: float

    @property
    def ok(self):
        return self.max_rel_err <= self.tolerance


def compare(name, analytical, numerical, tolerance, top=5, floor_scale=None):
    """Judge |a - n| against tolerance * scale, where scale is the size of the
    tensor's gradient as a whole (its largest entry), not of each element:
    an entry whose true gradient is 0 (softmax's shift invariance) must not
    raise a false alarm because its float noise is 'infinitely' relative."""
    a = np.asarray(analytical, dtype=np.float64)
    n = np.asarray(numerical, dtype=np.float64)
    err = np.abs(a - n)
    scale = max(float(np.max(np.abs(n), initial=0.0)), float(np.max(np.abs(a), initial=0.0)),
                floor_scale or 0.0, 1e-12)
    order = np.argsort(err, axis=None)[::-1][:top]
    worst = [(tuple(int(i) for i in np.unravel_index(k, a.shape)), float(a.flat[k]), float(n.flat[k]))
             for k in order if err.flat[k] > 0]
    return Comparison(name, float(err.max(initial=0.0)), float(err.max(initial=0.0)) / scale,
                      tolerance, worst, scale)
