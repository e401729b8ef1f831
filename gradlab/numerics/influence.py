"""Which outputs move when one slice of the input changes: the probe behind
`causality` (slices along time) and `batch_independence` (along the batch)."""
import numpy as np

from gradlab.contract.kinds import TOKEN_IDS
from gradlab.numerics.repeatable import require_repeatable
from gradlab.numerics.tolerance import tolerance


def perturbed(kind, cfg, x, axis, index, rng, ids=None):
    """A copy of x with slice `index` along `axis` changed (a different id for token kinds,
    or when `ids` says so)."""
    y = x.copy()
    where = (slice(None),) * axis + (index,)
    if kind.has(TOKEN_IDS) if ids is None else ids:
        y[where] = (y[where] + rng.integers(1, cfg.vocab_size, size=y[where].shape)) % cfg.vocab_size
    else:
        y[where] = y[where] + rng.standard_normal(y[where].shape).astype(y.dtype)
    return y


def influence_matrix(call, kind, cfg, x, axis, rng, which=None, calls=None):
    """(change, tolerance): change[r, c] is how much the output's slice r along
    `axis` moved when the input's slice c along `axis` was perturbed. `x` is one
    array, or a tuple of forward's inputs (then `call` takes them all, and the
    inputs at positions `which` are perturbed together; default: every float or
    id array). `call` gets fresh copies each time (mutating them is
    input_mutation's finding). calls(list of argument tuples) -> their outputs, if
    given, makes the same calls in the same order all at once (Subject.forwards: through a
    worker, a request per few MB of inputs)."""
    many = isinstance(x, tuple)
    inputs = x if many else (x,)
    specs = kind.input_specs() if many else ()
    if which is None:
        which = [k for k, a in enumerate(inputs) if isinstance(a, np.ndarray)
                 and (not many or specs[k].role in ("float", "ids"))]

    def run(many):
        fresh = [tuple(a.copy() if isinstance(a, np.ndarray) else a for a in args) for args in many]
        if calls is None:
            return [call(*args) for args in fresh]
        return calls(fresh)

    first, again = run([inputs, inputs])
    base = first.astype(np.float64)
    # Otherwise every slice looks like it moves every output, and the leak is blamed on the
    # wrong thing (a mask, a reshape) when the cause is randomness in forward.
    require_repeatable("forward", first, again, "which outputs an input position moves")
    allowed = tolerance("repeat", cfg.np_dtype, first).allowed(max(float(np.abs(base).max()), 1.0))
    n = inputs[which[0]].shape[axis]
    change = np.zeros((n, n))
    moved = [tuple(perturbed(kind, cfg, a, axis, c, rng, specs[k].role == "ids" if many else None)
                   if k in which else a for k, a in enumerate(inputs)) for c in range(n)]
    for c, out in enumerate(run(moved)):
        diff = np.abs(out.astype(np.float64) - base)
        change[:, c] = np.moveaxis(diff, axis, 0).reshape(n, -1).max(axis=1)
    return change, allowed
