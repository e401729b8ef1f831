"""`repeated_ids`: the gradient of an embedding table accumulates over every
occurrence of a token id. `dW[ids] = g` (and `dW[ids] += g`, which NumPy
buffers) keeps only one occurrence per id; `np.add.at(dW, ids, g)` sums them.

The batch is built so that ids repeat within a row and across rows. When the
forward is a plain lookup (out == W[ids]) the expected gradient is computed
exactly with np.add.at; otherwise (an lm) the rows of the repeated ids, and
one id that occurs once as a control, are compared with finite differences."""
import numpy as np

from gradlab.contract.errors import CheckFailure, CheckSkipped
from gradlab.diagnosis.causes import PADDING_HABIT
from gradlab.contract.kinds import TOKEN_IDS
from gradlab.contract.suite import Outcome, check
from gradlab.numerics.repeatable import require_repeatable
from gradlab.numerics.tolerance import computed_dtype, eps_of, tolerance

STEP = {"float64": 1e-6, "float32": 1e-3}
MAX_NUMERIC_ROWS = 2                                  # repeated ids checked numerically (each costs 2*D forwards)


def repeated_batch(cfg, rng):
    """ids (B, T) where one id occurs twice at the start (within row 0, or in rows 0 and 1
    when T = 1) and again at the very end (the last row), and, when there is room, a second
    id at two more places. Needs B * T >= 2 (the caller skips otherwise)."""
    B, T, V = cfg.batch_size, cfg.seq_len, cfg.vocab_size
    ids = rng.integers(0, V, size=(B, T))
    n = B * T
    a, b = rng.choice(V, size=2, replace=False) if V > 1 else (0, 0)
    a_cells = sorted({0, 1, n - 1})
    b_cells = sorted({2, n - T} - set(a_cells))         # row 0 and the start of the last row
    b_cells = b_cells if len(b_cells) == 2 else []
    flat = ids.reshape(-1)
    flat[a_cells] = a
    flat[b_cells] = b
    # id 0 is in every batch (the usual padding id: a backward that skips it, PyTorch's padding_idx=0 habit)
    free = [c for c in range(n) if c not in a_cells and c not in b_cells]
    if 0 not in flat and free:
        flat[free[len(free) // 2]] = 0
    return ids


def _table_slot(subject, slots):
    """The student's (V, D) embedding table and its reference name."""
    cfg = subject.cfg
    shape = (cfg.vocab_size, cfg.d_model)
    ref_names = [n for n, s in subject.kind.param_shapes(cfg).items() if tuple(s) == shape]
    mapping = subject.registration.param_map if isinstance(subject.registration.param_map, dict) else {}
    for slot in slots:
        if slot.name in ref_names or mapping.get(slot.name) in ref_names:
            return slot
    candidates = [s for s in slots if s.value.shape == shape]
    if len(candidates) == 1:
        return candidates[0]
    names = ", ".join(f"{s.name} {s.value.shape}" for s in slots)
    raise CheckSkipped(f"{subject.kind.name}: cannot tell which parameter is the token embedding table "
                       f"({' or '.join(ref_names) or 'shape'} {shape}); found {names or 'none'}. "
                       f"Name it {ref_names[0] if ref_names else 'weight'!r} or register with param_map")


def _accumulates(subject, module, slots, table, g, got, expected, rows, atol):
    """A second backward with the same upstream gradient adds `expected` to the table's gradient."""
    subject.backward(module, g)
    again = subject.read_grads(slots)[table.name].astype(np.float64)
    return bool(np.abs((again - got) - expected)[rows].max() <= atol)


def _occurrences(ids, token):
    return [tuple(int(i) for i in cell) for cell in np.argwhere(ids == token)]


@check("repeated_ids", needs={TOKEN_IDS}, order=45,
       summary="embedding gradients accumulate over repeated token ids (np.add.at)")
def repeated_ids(subject, rng):
    kind, cfg = subject.kind, subject.cfg
    if cfg.batch_size * cfg.seq_len < 2 or cfg.vocab_size < 2:
        raise CheckSkipped(f"{kind.name}: the batch is too small to repeat ids (needs batch_size*seq_len >= 2)")
    module, slots = subject.fresh(rng)
    table = _table_slot(subject, slots)
    ids = repeated_batch(cfg, rng)
    out = subject.forward(module, ids.copy())
    # the finite differences below need f to be a function of its input
    require_repeatable("forward", out, subject.forward(module, ids.copy()), "the embedding gradient")
    g = rng.standard_normal(out.shape).astype(cfg.np_dtype)
    subject.backward(module, g)
    got = subject.read_grads(slots)[table.name]
    # float32 numbers in a float64 run (a float32 table, a float32 forward or backward): it computes in float32
    # whatever cfg.dtype says (CONTRACT §6), and the finite differences' step and the tolerance are float32's
    dtype = max([computed_dtype([a], cfg.np_dtype) for a in (got, out)] +
                [a.dtype for a in (got, out, table.value) if a.dtype.kind == "f"], key=eps_of)
    got = got.astype(np.float64)
    tokens, counts = np.unique(ids, return_counts=True)
    repeated = [int(t) for t, c in sorted(zip(tokens, counts), key=lambda tc: -tc[1]) if c > 1]
    once = [int(t) for t, c in zip(tokens, counts) if c == 1]
    W = table.value
    if out.shape == ids.shape + (W.shape[1],) and np.array_equal(out, W[ids]):
        expected = np.zeros(W.shape, dtype=np.float64)
        np.add.at(expected, ids, g.astype(np.float64))
        rows = list(range(W.shape[0]))
        tol = tolerance("exact_sum", dtype).rtol
        how = "the exact sum np.add.at(dW, ids, g)"
    elif cfg.np_dtype == np.float16:
        raise CheckSkipped(f"{kind.name}: forward is not a plain lookup, and finite differences in float16 "
                           "(3 significant digits) cannot resolve one row's gradient; the gradient check compares "
                           "your float16 gradients with a float64 copy of your module instead")
    else:
        rows = repeated[:MAX_NUMERIC_ROWS] + once[:1]
        expected = _numeric_rows(subject, module, ids, g, W, rows, dtype)
        tol = tolerance("finite_difference_row", dtype).rtol
        how = "finite differences"
    scale = max(float(np.abs(expected[rows]).max()), float(np.abs(got[rows]).max()), 1e-12)
    err = np.abs(got - expected)[rows].max(axis=1) / scale              # per checked row
    wrong = {row: e for row, e in zip(rows, err) if e > tol}
    metrics = {"repeated_ids": len(repeated), "rows_checked": len(rows), "max_error": float(err.max()),
               "tolerance": tol}
    if not wrong:
        ids_repeat = "1 id repeats" if len(repeated) == 1 else f"{len(repeated)} ids repeat"
        return Outcome(f"gradient of {table.name!r} matches {how} on {len(rows)} rows; {ids_repeat} "
                       f"in the batch (max error {float(err.max()):.1e})", metrics)
    # an embedding alone: g is its output's gradient, so the table's gradient must add up to g's total
    D = got.shape[-1]
    alone = kind.name == "embedding" and g.shape[-1] == D
    total_right = alone and np.allclose(got.sum(axis=0), g.reshape(-1, D).astype(np.float64).sum(axis=0),
                                        rtol=10 * tol, atol=tol * scale)
    elsewhere = [r for r in np.flatnonzero(np.abs(got).max(axis=1) > 0) if not np.any(ids == r)] if alone else []
    if total_right and elsewhere:
        # every occurrence's gradient arrived, on other rows: the ids backward scattered by are not this batch's
        raise CheckFailure(
            f"{kind.name}: gradient of {table.name!r} row {rows[0] if rows[0] in wrong else min(wrong)} is wrong, and "
            f"row {int(elsewhere[0])} has a gradient though token id {int(elsewhere[0])} is not in the batch: the "
            "gradients add up to the upstream gradient's total, on the rows of other ids. Backward scatters by ids "
            "that are not this forward's (kept from an earlier call: set self.ids = ids on every forward)", metrics)
    absent = [r for r in wrong if not np.any(ids == r)]
    if absent and len(absent) == len(wrong):
        # (only the exact sum checks every row: the rows of ids in the batch are right, the others not 0)
        row = absent[0]
        raise CheckFailure(
            f"{kind.name}: gradient of {table.name!r} row {row} is nonzero though token id {row} is not in the batch, "
            "while the rows of the ids in it are right: backward sets only the rows this batch uses (dW[ids] = 0, "
            "then np.add.at) in a gradient kept between calls, so the other rows keep an earlier call's gradient; "
            "set it whole on every backward: dW = np.zeros_like(W); np.add.at(dW, ids, g)", metrics)
    zero = [r for r in wrong if not got[r].any()]
    if zero:
        row = zero[0]
        raise CheckFailure(
            f"{kind.name}: gradient of {table.name!r} row {row} is exactly 0, though token id {row} occurs "
            f"{int(np.sum(ids == row))} time(s) in the batch, at {_occurrences(ids, row)}: backward never adds to it"
            + (PADDING_HABIT if row == 0 else ""), metrics)
    bad_repeated = [r for r in wrong if r in repeated]
    if bad_repeated and not any(r not in repeated for r in wrong):
        token = bad_repeated[0]
        cells = _occurrences(ids, token)
        overwrite = ""
        control = ", while ids that occur once are right" if any(r not in repeated for r in rows) else ""
        held = _occurrences_held(got[token], g, cells, tolerance("exact_sum", dtype).rtol) \
            if how.startswith("the exact") else None
        if held is not None and len(held) == 1:
            overwrite = f" (it equals the upstream gradient at {held[0]} alone)"
        counts = {r: int(np.sum(ids == r)) for r in bad_repeated}
        mean = all(np.allclose(got[r] * counts[r], expected[r], rtol=10 * tol, atol=tol * scale) for r in bad_repeated)
        if mean:
            cause = ("It is their mean (divided by how often the id occurs): each occurrence adds its own gradient; "
                     "keep np.add.at(dW, ids, g) and drop the division by the count")
        elif held is not None and len(held) > 1:
            left = [c for c in cells if c not in held]
            cause = (f"It holds the gradients of {len(held)} of the {len(cells)} occurrences, without those at "
                     f"{left}: backward adds over part of the positions only (a slice such as ids[:, :-1], or a "
                     "loop that stops one short?); np.add.at(dW, ids, g) over every position")
        elif how.startswith("the exact") and not held:
            cause = ("It is neither one occurrence's gradient nor a sum of some of them: every occurrence adds "
                     "its own upstream gradient, np.add.at(dW, ids, g)")
        else:
            cause = ("This is an overwrite instead of np.add.at: dW[ids] = g (or dW[ids] += g, which NumPy does not "
                     "accumulate for repeated indices) keeps one occurrence; use np.add.at(dW, ids, g)" if held else
                     "The usual cause: an overwrite instead of np.add.at, dW[ids] = g (or dW[ids] += g, which "
                     "NumPy does not accumulate for repeated indices); use np.add.at(dW, ids, g)")
        raise CheckFailure(
            f"{kind.name}: gradient of {table.name!r} row {token} is wrong: token id {token} appears "
            f"{len(cells)} times in the batch, at {cells}, and its row must be the sum of the {len(cells)} "
            f"upstream gradients{overwrite}; error {wrong[token]:.3g} of the gradient's scale (tolerance "
            f"{tol:.0e}){control}. {cause}", metrics)
    row = min(wrong, key=lambda r: -wrong[r])
    if _accumulates(subject, module, slots, table, g, got, expected, rows, tol * scale):
        raise CheckFailure(
            f"{kind.name}: gradient of {table.name!r} row {row} is wrong (error {wrong[row]:.3g} of the gradient's "
            f"scale, tolerance {tol:.0e}) for every id, and a second backward added exactly this batch's gradient "
            "again: backward adds into a gradient buffer it never zeroes (np.add.at into it is right, but set it "
            "to 0 first: dW[...] = 0 or dW = np.zeros_like(W)), so it still holds the earlier calls' gradients; "
            "see the backward check", metrics)
    raise CheckFailure(
        f"{kind.name}: gradient of {table.name!r} row {row} is wrong (error {wrong[row]:.3g} of the gradient's "
        f"scale, tolerance {tol:.0e}), also for ids that occur only once, so repeated ids are not the (only) "
        "problem: see the gradient check", metrics)


def _occurrences_held(row, g, cells, rtol):
    """The occurrences (cells of ids) whose upstream gradients add up to `row`, an embedding table's row,
    the smallest such set first; None when no set of them does (or there are too many to try)."""
    import itertools
    if len(cells) > 8:
        return None
    parts = [g[c].astype(np.float64) for c in cells]
    for k in range(1, len(cells)):
        for chosen in itertools.combinations(range(len(cells)), k):
            if np.allclose(row, sum(parts[i] for i in chosen), atol=0, rtol=rtol):
                return [cells[i] for i in chosen]
    return []


def _numeric_rows(subject, module, ids, g, W, rows, dtype):
    """Central differences of sum(forward(ids) * g) with respect to W[rows] (other rows left 0), with the
    step of the dtype the module computes in. Each forward runs with W holding one perturbed entry during
    that call only (subject.forwards: through a worker, a request per few MB of perturbed tables, not one each)."""
    dtype = np.dtype(dtype).name
    g64 = g.astype(np.float64)
    calls, steps = [], []
    for row in rows:
        for j in range(W.shape[1]):
            old = W[row, j].copy()
            h = STEP.get(dtype, 1e-3) * max(1.0, abs(float(old)))
            taken = []
            for point in (old + h, old - h):
                contents = W.copy()
                contents[row, j] = point
                taken.append(float(contents[row, j]))      # the step actually taken (float32 rounds it)
                calls.append(((ids.copy(),), [(W, contents)]))
            steps.append((row, j, taken[0] - taken[1]))
    outs = subject.forwards(module, calls)
    numeric = np.zeros(W.shape, dtype=np.float64)
    for k, (row, j, width) in enumerate(steps):
        plus, minus = (float(np.sum(out.astype(np.float64) * g64)) for out in outs[2 * k:2 * k + 2])
        numeric[row, j] = (plus - minus) / width
    return numeric
