"""Which outputs move when one slice of the input changes: the probe behind
`causality` (slices along time) and `batch_independence` (along the batch)."""
import numpy as np

from .kinds import TOKEN_IDS

TOLERANCE = {"float64": 1e-12, "float32": 1e-6}   # relative to the output's size: independent parts give exactly 0


def perturbed(kind, cfg, x, axis, index, rng):
    """A copy of x with slice `index` along `axis` changed (a different id for token kinds)."""
    y = x.copy()
    where = (slice(None),) * axis + (index,)
    if kind.has(TOKEN_IDS):
        y[where] = (y[where] + rng.integers(1, cfg.vocab_size, size=y[where].shape)) % cfg.vocab_size
    else:
        y[where] = y[where] + rng.standard_normal(y[where].shape).astype(y.dtype)
    return y


def influence_matrix(call, kind, cfg, x, axis, rng):
    """(change, tolerance): change[r, c] is how much the output's slice r along
    `axis` moved when the input's slice c along `axis` was perturbed. `call`
    gets a fresh copy each time (mutating it is input_mutation's finding)."""
    base = call(x.copy()).astype(np.float64)
    n = x.shape[axis]
    change = np.zeros((n, n))
    for c in range(n):
        diff = np.abs(call(perturbed(kind, cfg, x, axis, c, rng)).astype(np.float64) - base)
        change[:, c] = np.moveaxis(diff, axis, 0).reshape(n, -1).max(axis=1)
    tolerance = TOLERANCE.get(cfg.np_dtype.name, 1e-6) * max(float(np.abs(base).max()), 1.0)
    return change, tolerance
