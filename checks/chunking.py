"""`chunking` and `memory`: attention computed chunk_size queries at a time
(article 000's memory_efficient_attention).

chunking: equal to full attention softmax(Q K^T / sqrt(d_k)) V for chunk sizes 1,
one that does not divide T, T, and one larger than T; with causal=True (when the
function takes it) the mask must use global positions across chunk boundaries; and
finite at scores where exp() overflows unless each row's max is subtracted.

memory: the point of chunking. Peak memory (tracemalloc, which sees NumPy's
allocations) of one call at T = MEMORY_T and 2 * MEMORY_T with a fixed chunk size:
chunked attention holds (chunk_size, T) scores per head, so the peak doubles; full
attention holds (T, T), so it quadruples. The growth exponent log2(peak ratio) must
stay below 1.5; it is reported, with the peak in bytes per chunk_size * T score
entries, as the check's figures."""
import math

import numpy as np

from gradlab.contract.errors import CheckFailure
from gradlab.contract.kinds import CHUNKED
from gradlab.contract.records import table
from gradlab.contract.suite import Outcome, check
from gradlab.execution.calls import call_chunked, causal_argument
from gradlab.numerics.tolerance import tolerance

MEMORY_T, MEMORY_CHUNK, MEMORY_HEADS, MEMORY_DK = 256, 16, 2, 16
MAX_EXPONENT = 1.5


def full_attention(Q, K, V, causal=False, local_chunk=None, ahead=0):
    """The reference in float64, without chunks. local_chunk: the buggy causal mask built per chunk from
    positions inside the chunk (query r of a chunk sees keys j <= r); ahead: keys that many positions after
    the query visible too (np.triu(..., k=2) for k=1); both for naming those slips."""
    Q, K, V = (a.astype(np.float64) for a in (Q, K, V))
    scores = Q @ K.transpose(0, 1, 3, 2) / math.sqrt(Q.shape[-1])
    T, S = scores.shape[-2:]
    if causal:
        rows = np.arange(T) if local_chunk is None else np.arange(T) % local_chunk
        scores = np.where(np.arange(S)[None, :] <= rows[:, None] + ahead, scores, -np.inf)
    e = np.exp(scores - scores.max(-1, keepdims=True))
    return (e / e.sum(-1, keepdims=True)) @ V


def _hint(got, Q, K, V, causal, c, T, tol):
    """Words for the likely cause, or ""."""
    def same(want):
        return float(np.abs(got - want).max()) <= tol
    if causal and same(full_attention(Q, K, V, causal=True, local_chunk=c)):
        return ("the causal mask is built per chunk from positions inside the chunk; query start + r must see "
                "keys j <= start + r (global positions: rows = np.arange(start, start + len(chunk)))")
    if causal and same(full_attention(Q, K, V)):
        return "causal=True is ignored: keys after the query must get -inf before the softmax"
    if causal and same(full_attention(Q, K, V, causal=True, ahead=1)):
        return ("the causal mask lets each query see the next key too (an off-by-one: np.triu(..., k=2), or "
                "j <= i + 1): keys j > i must get -inf, so mask with np.triu(ones, k=1), or j > i")
    if same(full_attention(Q * math.sqrt(Q.shape[-1]), K, V, causal)):
        return "the scores are not divided by sqrt(d_k)"
    rows = np.abs(got - full_attention(Q, K, V, causal)).max(axis=(0, 1, 3))
    bad = np.nonzero(rows > tol)[0]
    if T % c and bad.size and bad.min() >= (T // c) * c:
        return (f"only the last, shorter chunk (queries {(T // c) * c}..{T - 1}) is wrong: loop with "
                "range(0, T, chunk_size) and slice Q[:, :, i:i + chunk_size] (the slice stops at T by itself)")
    return ""


@check("chunking", needs={CHUNKED}, order=20,
       summary="equals full attention for chunk sizes 1, T, a non-divisor of T and > T; causal across chunks")
def chunking(subject, rng):
    kind, cfg = subject.kind, subject.cfg
    B, H, T, dk = cfg.batch_size, cfg.num_heads, max(cfg.seq_len, 3), cfg.d_k
    Q, K, V = (rng.standard_normal((B, H, T, dk)).astype(cfg.np_dtype) for _ in range(3))
    sizes = sorted({1, next(c for c in range(2, T + 1) if T % c) if T > 2 else 2, T, T + 3})
    how = causal_argument(subject.registration.target)
    takes_causal = how is not None
    rows = []
    for causal in ((False, True) if takes_causal else (False,)):
        want = full_attention(Q, K, V, causal)
        for c in sizes:
            got = call_chunked(subject, Q, K, V, c, causal if takes_causal else None,
                               by_name=how == "name").astype(np.float64)
            tol = tolerance("forward", cfg.np_dtype, got).allowed(float(np.abs(want).max()))
            err = float(np.abs(got - want).max())
            rows.append({"chunk_size": c, "causal": causal, "T": T, "max_error": err, "ok": err <= tol})
            if err > tol:
                worst = tuple(int(i) for i in np.unravel_index(int(np.argmax(np.abs(got - want))), got.shape))
                hint = _hint(got, Q, K, V, causal, c, T, tol)
                raise CheckFailure(
                    f"{kind.name}: chunk_size={c}, causal={causal}, T={T}: the output differs from full attention "
                    f"at (batch, head, query, dim) {worst}: got {got[worst]:.6g}, expected {want[worst]:.6g}"
                    + (f"; likely cause: {hint}" if hint else ""),
                    {"chunk_size": c, "causal": causal, "max_error": err},
                    {"views": [table("chunk sizes tried", rows)]})
    _large_scores(subject, Q, K, V, sizes[1], rows)
    note = "" if takes_causal else "; causal=True not tried: your function takes no causal argument"
    return Outcome(f"equals full attention for chunk sizes {', '.join(map(str, sizes))} (T={T})"
                   + (", with and without the causal mask" if takes_causal else "") + note,
                   {"chunk_sizes": len(sizes), "causal_checked": takes_causal},
                   {"views": [table("chunk sizes tried", rows)]})


def _large_scores(subject, Q, K, V, c, rows):
    """Scores up to 1.5 x the log of the dtype's largest number (about 1065 in float64, 133 in float32), where
    exp() overflows unless each row's max is subtracted first: the output must stay finite. (Finite only: at
    such scores float32's rounding of the scores moves the near one-hot weights more than a comparison allows.)"""
    kind, dtype = subject.kind, subject.cfg.np_dtype
    scores = np.abs(Q.astype(np.float64) @ K.astype(np.float64).transpose(0, 1, 3, 2)).max() / math.sqrt(Q.shape[-1])
    top = 1.5 * math.log(float(np.finfo(dtype).max))
    s = math.sqrt(top / max(float(scores), 1e-12))
    got = call_chunked(subject, (Q * s).astype(dtype), (K * s).astype(dtype), V, c, finite=False)
    bad = ~np.isfinite(np.asarray(got, dtype=np.float64))
    rows.append({"chunk_size": c, "causal": False, "T": Q.shape[2], "max_error": "scores x " + f"{s * s:.3g}",
                 "ok": not bad.any()})
    if bad.any():
        raise CheckFailure(
            f"{kind.name}: with scores up to {top:.0f} (Q and K scaled by "
            f"{s:.3g}), chunk_size={c}: the output has {int(bad.sum())} non-finite values (first at "
            f"{tuple(int(i) for i in np.argwhere(bad)[0])}): exp(scores) overflowed {np.dtype(dtype).name}; subtract "
            "each query row's max over its keys before exp (softmax(s) = exp(s - max) / sum), as full attention does",
            {"chunk_size": c, "non_finite": int(bad.sum())}, {"views": [table("chunk sizes tried", rows)]})


def peak_bytes(subject, T, rng, dtype):
    Q, K, V = (rng.standard_normal((1, MEMORY_HEADS, T, MEMORY_DK)).astype(dtype) for _ in range(3))
    with subject.peak_memory() as measured:      # where the code runs (a worker process, or here)
        call_chunked(subject, Q, K, V, MEMORY_CHUNK)
    return measured["peak"]


@check("memory", needs={CHUNKED}, order=21,
       summary="peak memory (tracemalloc) grows like chunk_size * T, not T**2")
def memory(subject, rng):
    kind, dtype = subject.kind, subject.cfg.np_dtype
    small, large = MEMORY_T, 2 * MEMORY_T
    peaks = {T: peak_bytes(subject, T, rng, dtype) for T in (small, large)}
    exponent = math.log2(peaks[large] / max(peaks[small], 1))
    per_entry = peaks[large] / (MEMORY_HEADS * MEMORY_CHUNK * large)
    rows = [{"T": T, "peak bytes": peaks[T], "full (T, T) scores would be": MEMORY_HEADS * T * T * dtype.itemsize,
             "chunk_size * T scores": MEMORY_HEADS * MEMORY_CHUNK * T * dtype.itemsize} for T in (small, large)]
    metrics = {"peak_bytes_small": peaks[small], "peak_bytes_large": peaks[large], "growth_exponent": exponent,
               "bytes_per_chunk_entry": per_entry, "chunk_size": MEMORY_CHUNK}
    view = table(f"{kind.name}: peak memory of one call (1 batch, {MEMORY_HEADS} heads, d_k={MEMORY_DK}, "
                 f"chunk_size={MEMORY_CHUNK})", rows)
    if exponent >= MAX_EXPONENT:
        raise CheckFailure(
            f"{kind.name}: peak memory grows like T**{exponent:.2f} ({peaks[small]:,} bytes at T={small}, "
            f"{peaks[large]:,} at T={large}, chunk_size={MEMORY_CHUNK}): something of size (T, T) is held at once; "
            "compute the scores of chunk_size queries at a time (Q[:, :, i:i + chunk_size] @ K^T), never the "
            "whole score matrix", metrics, {"views": [view]})
    return Outcome(f"peak memory grows like T**{exponent:.2f} (T={small}: {peaks[small]:,} bytes, T={large}: "
                   f"{peaks[large]:,}; {per_entry:.1f} bytes per chunk_size * T score entry)", metrics,
                   {"views": [view]})
