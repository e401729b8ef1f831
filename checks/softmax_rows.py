"""`softmax_rows`: attention weights (and the softmax function's output) are
probability rows: each row sums to 1 and nothing is negative; for causal
attention weights the future (above the diagonal) is exactly 0."""
import numpy as np

from gradlab.contract.errors import CheckFailure
from gradlab.execution.harness import describe
from gradlab.contract.kinds import ATTN_WEIGHTS, CAUSAL, PROBABILITIES
from gradlab.contract.records import heatmap
from gradlab.execution.subject import call_softmax
from gradlab.contract.suite import Outcome, check
from gradlab.numerics.tolerance import tolerance


def _row_problems(what, P, causal, dtype):
    """(message, index) of the first broken row of P (..., T, N), or None. Rows may sum to 1 - eps / sum
    (a sound e / (e.sum() + eps)); the future must be 0 (exp(-inf) and exp(-1e9 - max) are exactly 0)."""
    sum_tol = tolerance("probability_sum", dtype).rtol
    neg = np.argwhere(P < -sum_tol)
    if len(neg):
        i = tuple(int(v) for v in neg[0])
        return (f"{what(i[:-1])}, column {i[-1]} = {P[i]:.4g} is negative ({len(neg)} negative entries): "
                "probabilities cannot be; are you keeping the scores (before the softmax) instead of its output?",
                i[:-1])
    if causal:
        T = P.shape[-1]
        future = np.triu(np.ones((T, T), dtype=bool), k=1)
        leak = np.argwhere((np.abs(P) > tolerance("masked_zero", dtype).rtol) & future)
        if len(leak):
            i = tuple(int(v) for v in leak[0])
            return (f"{what(i[:-1])} puts weight {P[i]:.4g} on future position {i[-1]} > row {i[-2]} "
                    f"({len(leak)} future entries are not 0): {_mask_hint(P, dtype)}", i[:-1])
    sums = P.sum(axis=-1)
    bad = np.argwhere(np.abs(sums - 1) > sum_tol)
    if len(bad):
        i = tuple(int(v) for v in bad[0])
        axis = next((a for a in range(P.ndim - 2, -1, -1) if np.allclose(P.sum(axis=a), 1, atol=sum_tol * 10)),
                    None)
        if axis == P.ndim - 2 and causal:
            hint = "the columns sum to 1: the softmax is taken over axis -2; use axis=-1 (the keys)"
        elif axis is not None:
            hint = (f"the sums over axis {axis}{' (the batch)' if axis == 0 else ''} are 1: the softmax is taken "
                    f"over axis {axis}; use axis=-1 (the last axis)")
        else:
            hint = ("normalise each row by its own sum (exp(s) / exp(s).sum(axis=-1, keepdims=True)); "
                    "a mask applied after the softmax also breaks the sums: mask the scores before it")
        return (f"{what(i)} sums to {sums[i]:.10g}, not 1 ({len(bad)} rows off by up to "
                f"{float(np.abs(sums - 1).max()):.3g}): {hint}", i)
    return None


def _mask_hint(P, dtype):
    """Why the future has weight: an off-by-one mask has a recognisable shape."""
    T, tol = P.shape[-1], tolerance("masked_zero", dtype).rtol
    nonzero = (np.abs(P) > tol).any(axis=tuple(range(P.ndim - 2)))          # (T, T) over batch and heads
    fix = "set scores[..., i, j] = -inf (or -1e9) for j > i before the softmax (np.triu(..., k=1) marks them)"
    if T > 2 and not nonzero[np.triu_indices(T, k=2)].any():
        return (f"only the first step of the future (j = i + 1) has weight: the mask is off by one and keeps "
                f"j <= i + 1; {fix}")
    future = np.abs(P)[..., np.triu(np.ones((T, T), dtype=bool), k=1)]
    if future.size and np.mean(future > tol) > 0.5 and future.max() < 0.01 / T:
        return (f"the future's weights are small (at most {future.max():.2g}) but not 0: the mask fills the scores "
                f"with a finite value too close to them (exp(-10) is 4.5e-05, not 0); {fix}")
    if T > 1 and not np.diagonal(nonzero)[1:].any():
        return (f"the diagonal (each position itself) gets no weight after row 0 and row 0, with nothing left, "
                f"spreads over the future: the mask also hides j == i (j < i kept instead of j <= i); {fix}")
    return f"the causal mask is missing or points the wrong way; {fix}"


def _dtype(cfg, out):
    """The coarser of cfg.dtype and the dtype the student returned: a softmax that
    computes in float32 whatever cfg says is correct, and judged by float32 rounding."""
    return max((cfg.np_dtype, out.dtype), key=lambda d: np.finfo(d).eps if d.kind == "f" else 0).name


@check("softmax_rows", any_of={ATTN_WEIGHTS, PROBABILITIES}, order=8,
       summary="attention weights / softmax rows sum to 1, no negatives, the future (upper triangle) is 0")
def softmax_rows(subject, rng):
    kind, cfg = subject.kind, subject.cfg
    if kind.form == "function":
        x = (3 * rng.standard_normal(kind.input_shape(cfg))).astype(cfg.np_dtype)
        out = call_softmax(subject, x)
        P = out.astype(np.float64)
        problem = _row_problems(lambda i: f"softmax(x), row {list(i)}", P, False, _dtype(cfg, out))
        view = heatmap(f"{kind.name}: softmax(x)[0] (rows: positions, columns: classes)", P[0].tolist(),
                       xlabel="class", ylabel="row")
        if problem:
            raise CheckFailure(f"{kind.name}: {problem[0]}", {"rows": int(np.prod(P.shape[:-1]))},
                               {"views": [view]})
        return Outcome(f"{int(np.prod(P.shape[:-1]))} rows sum to 1, none negative",
                       {"rows": int(np.prod(P.shape[:-1]))}, {"views": [view]})

    B, H, T = cfg.batch_size, cfg.num_heads, cfg.seq_len
    module, _ = subject.fresh(rng)
    subject.forward(module, *subject.make_inputs(rng))
    A = subject.attribute(module, "attn_weights")
    if A is None:
        raise CheckFailure(f"{kind.name}: no attn_weights after forward: keep the softmax output as "
                           f"self.attn_weights, shape (B, H, T, T) = {(B, H, T, T)} (CONTRACT §3)")
    if not isinstance(A, np.ndarray) or A.shape != (B, H, T, T):
        raise CheckFailure(f"{kind.name}: attn_weights is {describe(A)}; expected an array of shape "
                           f"(B, H, T, T) = {(B, H, T, T)}")
    dtype = _dtype(cfg, A)
    A = A.astype(np.float64)
    problem = _row_problems(lambda i: f"attn_weights[batch {i[0]}, head {i[1]}, row {i[2]}]", A,
                           kind.has(CAUSAL), dtype)
    b, h = (problem[1][0], problem[1][1]) if problem else (0, 0)
    view = heatmap(f"{kind.name}: attn_weights[{b}, {h}] (rows: queries, columns: keys; the future is grey where "
                   "its weight is 0)", A[b, h].tolist(), xlabel="key position", ylabel="query position", mask_upper=True)
    metrics = {"rows": B * H * T, "max_sum_error": float(np.abs(A.sum(-1) - 1).max()),
               "max_future_weight": float(np.abs(np.triu(A, k=1)).max())}
    if problem:
        raise CheckFailure(f"{kind.name}: {problem[0]}", metrics, {"views": [view]})
    return Outcome(f"{B * H * T} rows of attn_weights sum to 1, none negative, the future is 0",
                   metrics, {"views": [view]})
