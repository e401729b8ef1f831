"""Which outputs move when one slice of the input changes: the probe behind
`causality` (slices along time) and `batch_independence` (along the batch)."""
import numpy as np

from gradlab.contract.kinds import TOKEN_IDS
from gradlab.numerics.repeatable import require_repeatable
from gradlab.numerics.tolerance import tolerance


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
    first = call(x.copy())
    base = first.astype(np.float64)
    # Otherwise every slice looks like it moves every output, and the leak is blamed on the
    # wrong thing (a mask, a reshape) when the cause is randomness in forward.
    require_repeatable("forward", first, call(x.copy()), "which outputs an input position moves")
    allowed = tolerance("repeat", cfg.np_dtype, first).allowed(max(float(np.abs(base).max()), 1.0))
    n = x.shape[axis]
    change = np.zeros((n, n))
    for c in range(n):
        diff = np.abs(call(perturbed(kind, cfg, x, axis, c, rng)).astype(np.float64) - base)
        change[:, c] = np.moveaxis(diff, axis, 0).reshape(n, -1).max(axis=1)
    return change, allowed
