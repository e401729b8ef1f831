"""Which outputs move when one slice of the input changes: the probe behind
`causality` (slices along time) and `batch_independence` (along the batch)."""
import numpy as np

from gradlab.contract.errors import CheckFailure
from gradlab.contract.kinds import TOKEN_IDS

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
    again = call(x.copy()).astype(np.float64)
    tolerance = TOLERANCE.get(cfg.np_dtype.name, 1e-6) * max(float(np.abs(base).max()), 1.0)
    if again.shape == base.shape and float(np.abs(again - base).max()) > tolerance:
        # Otherwise every slice looks like it moves every output, and the leak is blamed on the
        # wrong thing (a mask, a reshape) when the cause is randomness in forward.
        i = tuple(int(k) for k in np.unravel_index(int(np.argmax(np.abs(again - base))), base.shape))
        raise CheckFailure(
            f"{kind.name}: forward is not repeatable: the same input gave {base[i]:.6g} then {again[i]:.6g} at "
            f"index {i}, so which outputs an input position moves cannot be judged. Is dropout left on "
            "(forward must not drop anything unless asked to train: default training=False), or does forward "
            "draw random numbers or keep state between calls?",
            {"repeat_difference": float(np.abs(again - base).max()), "tolerance": tolerance})
    n = x.shape[axis]
    change = np.zeros((n, n))
    for c in range(n):
        diff = np.abs(call(perturbed(kind, cfg, x, axis, c, rng)).astype(np.float64) - base)
        change[:, c] = np.moveaxis(diff, axis, 0).reshape(n, -1).max(axis=1)
    return change, tolerance
