"""Diagnosis: compare a wrong tensor with the right one for the patterns
hand-written modules are known to produce, and say it in words a student
understands. `diagnose` explains a failed gradient; `factor_pattern` and
`position_pattern` explain a failed forward (the `reference` check).

Every helper returns one sentence or None: an unknown pattern is not guessed at.
"""
import math

import numpy as np

from gradlab.contract.kinds import CAUSAL, HEADS, LOSS, TOKEN_IDS
from gradlab.numerics.tolerance import PATTERN_MATCH as MATCH   # the one table


def diagnose(kind, name, analytical, numerical, context):
    """A sentence naming the likely cause, or None when no known pattern fits.

    kind: KindSpec; name: "x" (the input) or the dotted parameter name;
    analytical, numerical: float64 arrays of the same shape (numerical is the
    full per-element map); context: {"cfg": Config, "x": forward input (ids for
    token kinds), "g": upstream gradient given to backward}.
    """
    a = np.asarray(analytical, dtype=np.float64)
    n = np.asarray(numerical, dtype=np.float64)
    if a.shape != n.shape or a.size == 0:
        return None
    context = context or {}
    cfg = context.get("cfg")
    scale = max(float(np.abs(n).max()), float(np.abs(a).max()), 1e-30)
    what = "the input gradient dL/dx" if name == "x" else f"the gradient of {name!r}"
    if float(np.abs(n).max()) <= MATCH * scale:
        return None     # the true gradient is ~0: nothing to compare patterns with
    for test in (_all_zero, _transposed, _repeated_ids, _unseen_ids, _seen_ids_only, _residual, _bias_token,
                 _constant_factor, _one_sample_right, _future_positions, _partly_zero, _partial_factor,
                 _row_constant, _row_centred,
                 _unnormalised_scale, _slightly_off):
        found = test(kind, name, a, n, context, cfg, what)
        if found:
            return found
    return None


def _close(a, b, ref_scale=None):
    s = ref_scale if ref_scale is not None else max(float(np.abs(b).max()), float(np.abs(a).max()), 1e-30)
    return float(np.abs(a - b).max()) <= MATCH * s


def _all_zero(kind, name, a, n, context, cfg, what):
    if not np.any(a):
        return (f"{what} is all zero where it should not be: backward never fills it (or fills a "
                "copy, or resets it after computing it)")
    return None


def _transposed(kind, name, a, n, context, cfg, what):
    if a.ndim == 2 and a.shape[0] == a.shape[1] and not _close(a, n) and _close(a, n.T):
        return (f"{what} is the transpose of the right one: for y = x @ W the weight gradient is "
                "x.T @ grad_out, not grad_out.T @ x")
    return None


def _token_counts(kind, a, context, cfg):
    """How often each token id occurs in the input, when `a` is a (V, D) table of a token kind whose output
    is logits over the vocabulary (None otherwise): the rows the lookup path reaches, beside the tied output
    projection's, which reaches every row. (A plain embedding's rows of absent ids get no gradient at all.)"""
    try:
        tied = cfg is not None and tuple(kind.output_shape(cfg))[-1:] == (cfg.vocab_size,)
    except (AttributeError, TypeError, ValueError):
        tied = False
    counts = _id_counts(a, context, cfg) if kind.has(TOKEN_IDS) and tied else []
    return counts[0] if counts else None


def _id_counts(a, context, cfg):
    """[how often each id occurs] for every integer input (a seq2seq's src_ids and tgt_ids), when `a` is a
    (V, D) table: the rows a lookup of that input reaches."""
    if a.ndim != 2 or cfg is None or a.shape[0] != cfg.vocab_size:
        return []
    inputs = context.get("inputs") or (context.get("x"),)
    return [np.bincount(np.asarray(i).reshape(-1), minlength=a.shape[0]) for i in inputs
            if isinstance(i, np.ndarray) and i.dtype.kind in "iu" and i.size and i.min() >= 0]


# an embedding row left at 0 for id 0: the words of both the gradient check's diagnosis and repeated_ids
PADDING_HABIT = (" (PyTorch's padding_idx=0 habit? CONTRACT §3's embedding has no padding id: every id's row gets "
                 "the sum of its occurrences' gradients)")


def _repeated_ids(kind, name, a, n, context, cfg, what):
    scale = max(float(np.abs(n).max()), 1e-30)
    bad_rows = {int(r) for r in np.nonzero(np.abs(a - n).max(axis=1) > MATCH * scale)[0]} if a.ndim == 2 else set()
    seen = next((c for c in _id_counts(a, context, cfg) if bad_rows <= {int(r) for r in np.nonzero(c > 0)[0]}),
                None)
    if seen is not None and bad_rows and not np.any(a[sorted(bad_rows)]):
        rows = sorted(bad_rows)[:4]
        return (f"{what} is exactly 0 at the rows of token ids {rows}, which occur in the input: backward never "
                "adds to them" + (PADDING_HABIT if 0 in bad_rows else ""))
    counts = next((c for c in _id_counts(a, context, cfg) if bad_rows <= {int(r) for r in np.nonzero(c > 1)[0]}),
                  None)
    if counts is None:
        return None
    repeated = {int(r) for r in np.nonzero(counts > 1)[0]}
    if bad_rows and bad_rows <= repeated:
        rows = sorted(bad_rows)[:4]
        bad = sorted(bad_rows)
        if _close(a[bad] * counts[bad, None], n[bad]):
            return (f"{what} is wrong only at the rows of token ids that occur more than once (e.g. ids {rows}), "
                    "where it is the sum of the occurrences' gradients divided by the count (a mean): each "
                    "occurrence adds its own gradient; keep np.add.at(dW, ids, g) and drop the division")
        return (f"{what} is wrong only at the rows of token ids that occur more than once (e.g. ids {rows}): "
                "dW[ids] = g (or dW[ids] += g) keeps one occurrence's gradient; accumulate with "
                "np.add.at(dW, ids, g)")
    return None


def _unseen_ids(kind, name, a, n, context, cfg, what):
    """A tied (V, D) embedding whose rows for ids absent from the input get no gradient:
    only the lookup path is in backward, the output projection's path is missing."""
    counts = _token_counts(kind, a, context, cfg)
    if counts is None:
        return None
    unseen = counts == 0
    scale = max(float(np.abs(n).max()), 1e-30)
    if not unseen.any() or np.any(a[unseen]) or not (np.abs(n[unseen]) > MATCH * scale).any():
        return None
    rows = [int(r) for r in np.nonzero(unseen)[0][:4]]
    return (f"{what} is zero at the rows of token ids that do not occur in the input (e.g. ids {rows}), which "
            "still get a gradient through the tied output projection logits = h @ W.T: add that path, "
            "grad_logits.reshape(-1, V).T @ h.reshape(-1, D), to the lookup path's np.add.at")


def _seen_ids_only(kind, name, a, n, context, cfg, what):
    """A tied (V, D) embedding right at the rows of ids absent from the input (the output projection's path
    alone reaches them) and wrong at the rows of the ids that occur: the lookup path is missing (or wrong)."""
    counts = _token_counts(kind, a, context, cfg)
    if counts is None:
        return None
    seen = counts > 0
    scale = max(float(np.abs(n).max()), 1e-30)
    if seen.all() or not seen.any() or not _close(a[~seen], n[~seen], scale) or _close(a[seen], n[seen], scale):
        return None
    rows = [int(r) for r in np.nonzero(seen)[0][:4]]
    return (f"{what} is right at the rows of token ids that do not occur in the input, which only the tied output "
            f"projection reaches, and wrong at the rows of the ids that do (e.g. ids {rows}): the lookup path is "
            "missing or wrong; the table's gradient is the output path's grad_logits.reshape(-1, V).T @ h.reshape(-1, "
            "D) plus the lookup's np.add.at(dW, ids, dx), dx the gradient at the embedding's output")


def _one_sample_right(kind, name, a, n, context, cfg, what):
    """An input gradient right for one sample of the batch alone: backward used one sample's cache for all (a
    loop over the samples in forward, each pass overwriting self.cache, leaves the last one's)."""
    B = getattr(cfg, "batch_size", None)
    if name not in ("x", "memory") or a.ndim < 2 or not B or B < 2 or a.shape[0] != B:
        return None
    scale = max(float(np.abs(n).max()), 1e-30)
    right = [_close(a[b], n[b], scale) for b in range(B)]
    if right.count(True) != 1 or not any(np.any(a[b]) for b in range(B) if not right[b]):
        return None         # (the others exactly 0: backward never fills them; _partly_zero says so)
    padded = _padded_samples(context, B)
    if padded is not None and right == [not p for p in padded]:
        # (gradlab's padding masks pad every sample but the last: right there alone is the mask, not a cache)
        return (f"{what} is right only for the samples with no padded key ({', '.join(str(i) for i in range(B) if not padded[i])}) "
                "and wrong for those with padding: the key padding mask is handled differently in backward than in "
                "forward (padded keys must get exactly zero weight and pass no gradient; a mask applied after the "
                "softmax, without renormalising, is what the key_padding check names)")
    b = right.index(True)
    if b == B - 1:
        return (f"{what} is right for the last sample of the batch only and wrong for the others: backward uses "
                "what forward cached for the last sample alone (a loop over the samples in forward that overwrites "
                "self.cache on each pass? keep one cache per sample, or compute the whole batch at once)")
    return (f"{what} is right for sample {b} of the batch only and wrong for the others: backward uses one "
            "sample's cached values for every sample")


def _padded_samples(context, B):
    """[whether sample b has a padded key] from the call's key_padding_mask (a (B, S) bool input), or None."""
    for value in context.get("inputs") or ():
        if isinstance(value, np.ndarray) and value.dtype == bool and value.ndim == 2 and value.shape[0] == B:
            return [bool(value[b].any()) for b in range(B)]
    return None


def _residual(kind, name, a, n, context, cfg, what):
    g = context.get("g")
    if name != "x" or g is None or np.shape(g) != a.shape:
        return None
    g = np.asarray(g, dtype=np.float64)
    diff = a - n
    gs = max(float(np.abs(g).max()), 1e-30)
    if _close(diff, -g, gs):
        return (f"{what} is short by exactly the upstream gradient: the residual (skip) path is missing in "
                "backward; for out = x + f(x), dL/dx = grad_out + (gradient through f)")
    if _close(diff, g, gs):
        return (f"{what} has the upstream gradient once too often: the residual (skip) path is added twice "
                "in backward")
    return None


def _bias_token(kind, name, a, n, context, cfg, what):
    """A bias added to the output: its gradient is grad_out summed over every token."""
    g = context.get("g")
    if g is None or a.ndim != 1 or np.ndim(g) < 2 or np.shape(g)[-1] != a.shape[0]:
        return None
    g2 = np.asarray(g, dtype=np.float64).reshape(-1, a.shape[0])
    total = g2.sum(axis=0)
    if not _close(total, n):
        return None      # not a bias added straight to the output
    tokens = g2.shape[0]
    if _close(a, total / tokens, float(np.abs(total).max()) / tokens):
        return (f"{what} is the mean over the {tokens} tokens instead of the sum: a bias is added at every "
                "position, so its gradient is grad_out summed over batch and time")
    gs = max(float(np.abs(g2).max()), 1e-30)
    hits = [i for i in range(tokens) if _close(a, g2[i], gs)]
    if hits:
        shape = np.shape(g)[:-1]
        where = tuple(int(i) for i in np.unravel_index(hits[-1], shape))
        return (f"{what} equals the gradient of a single token (position {where}) instead of the sum over all "
                "tokens: sum grad_out over batch and time (e.g. grad_out.reshape(-1, D).sum(axis=0)), "
                "and do not overwrite it inside a loop")
    return None


def _constant_factor(kind, name, a, n, context, cfg, what):
    c = _fit_factor(a, n)
    if c is None:
        return None
    if abs(c + 1) <= MATCH:
        return f"{what} is the negative of the right one everywhere: the sign is flipped"
    dropped = _eval_scaling(kind, c, cfg)
    if dropped:
        return f"{what} is {c:.4g} x the derivative of your forward everywhere, {dropped}"
    label = name_factor(c, cfg, kind)
    if label:
        return f"{what} is {c:.4g} x the right one, a constant factor of {label}{_factor_advice(label)}"
    return (f"{what} is {c:.4g} x the right one everywhere: a constant factor is missing or extra in "
            "backward (a scale, a mean vs a sum)")


def _eval_scaling(kind, c, cfg):
    """For dropout (checked with training=False): a factor of (1-p) or 1/(1-p) between backward and the
    derivative of forward is evaluation-time scaling in one of the two, not a backward bug as such."""
    p = getattr(cfg, "dropout", None) if kind is not None and kind.name == "dropout" else None
    if not p or not 0 < p < 1:
        return None
    for v, label in ((1 - p, "1-p"), (1 / (1 - p), "1/(1-p)")):
        if abs(c - v) <= MATCH * v:
            return (f"a factor of {label} = {v:.4g} with p = {p:g}, training=False: forward and backward disagree "
                    "on scaling at evaluation (one of them multiplies by 1-p or divides by it, the other does not); "
                    "inverted dropout is the identity when training is False, in forward and in backward")
    return None


def _fit_factor(got, want):
    """c when got == c * want (c != 1) to MATCH, else None."""
    got = np.asarray(got, dtype=np.float64)
    want = np.asarray(want, dtype=np.float64)
    ww = float(np.sum(want * want))
    if ww == 0 or not np.any(got):
        return None
    c = float(np.sum(got * want)) / ww
    if abs(c - 1) < MATCH or not _close(got, c * want, max(float(np.abs(got).max()), abs(c) * float(np.abs(want).max()))):
        return None
    return c


def _factor_advice(label):
    """What a factor named by name_factor usually means; for a factor with several names at this size
    (1/2 = 1/B when B = 2), each of their meanings, the first name's first."""
    first, _, rest = label.split(" =")[0].partition(" (or ")
    advice = []
    for name in [first] + [n.strip() for n in rest.split(":")[0].split(",") if n.strip()]:
        words = _FACTOR_WORDS.get(name)
        if words is None and "sqrt(d_k)" in name:
            words = "the 1/sqrt(d_k) scale of the attention scores is missing or applied twice"
        elif words is None and name.startswith("-1"):
            words = "the sign is flipped"
        elif words is None and any(k in name for k in ("B", "T")):    # B, T, B*T and their inverses
            words = "a mean where a sum belongs, or the other way round (over batch and/or time)"
        if words and words not in advice:
            advice.append(words)
    if not advice:
        return ""
    apart = ""
    if rest and any(size in label for size in ("B (", "B*T", "1/B", "T (", "1/T")):
        size = "batch_size" if "B" in label.split(" =")[0] else "seq_len"
        apart = f" (a run with another {size}, --set {size}=3, tells them apart)"
    return ": " + "; or ".join(advice) + apart


_FACTOR_WORDS = {
    "2": "a factor 2 (e.g. the derivative of x^2 is 2x, or a gradient added twice)",
    "1/2": "half the right gradient (e.g. a 1/2 in front of a derivative of x^2, or only one of two paths added)",
}


def name_factor(c, cfg, kind=None):
    """'1/sqrt(d_k) = 0.408' style names for c from cfg's sizes, or None. With a kind, only the sizes it has:
    heads and d_k where there is attention, vocab_size where there are token ids or logits (an FFN's factor of
    2 is no "num_heads")."""
    candidates = [(-1.0, "-1")]
    if cfg is not None:
        heads = kind is None or kind.has(HEADS)
        vocab = kind is None or kind.has(TOKEN_IDS) or kind.has(LOSS)
        sizes = [("2", 2)] + ([("sqrt(d_k)", math.sqrt(cfg.d_k)), ("d_k", cfg.d_k)] if heads else []) + [
                 ("sqrt(d_model)", math.sqrt(cfg.d_model)), ("d_model", cfg.d_model)] + (
                 [("num_heads", cfg.num_heads)] if heads else []) + [
                 ("B (batch size)", cfg.batch_size), ("T (sequence length)", cfg.seq_len),
                 ("B*T (number of tokens)", cfg.batch_size * cfg.seq_len)] + (
                 [("vocab_size", cfg.vocab_size)] if vocab else [])
    else:
        sizes = [("2", 2)]
    for label, v in sizes:
        if v != 1:
            short = label.split(' (')[0]
            candidates += [(float(v), label), (1.0 / v, f"1/({short})" if "*" in short else f"1/{short}")]
    names = [label for v, label in candidates if abs(c - v) <= MATCH * abs(v)]
    if not names:
        return None
    head = names[0] if len(names) == 1 else f"{names[0]} (or {', '.join(names[1:])}: equal at this size)"
    return f"{head} = {c:.4g}"


def _future_positions(kind, name, a, n, context, cfg, what):
    """For (B, T, ...) inputs of causal kinds: right at the last position, wrong before it: the extra
    gradient comes from later positions (the future)."""
    if name != "x" or not kind.has(CAUSAL) or a.ndim < 3 or a.shape[1] < 2:
        return None
    scale = max(float(np.abs(n).max()), 1e-30)
    per_t = np.abs(a - n).reshape(a.shape[0], a.shape[1], -1).max(axis=(0, 2)) > MATCH * scale
    T = a.shape[1]
    if per_t.any() and not per_t[-1]:
        wrong = [int(t) for t in np.nonzero(per_t)[0]]
        return (f"{what} is wrong only at positions {wrong} and right at the last position {T - 1}: gradient flows "
                "back from later positions (the future); apply the causal mask in backward as in forward "
                "(masked attention weights must pass no gradient)")
    if per_t.any() and not per_t[0]:
        wrong = [int(t) for t in np.nonzero(per_t)[0]]
        return f"{what} is right at position 0 but wrong at positions {wrong}: look at what mixes time steps"
    return None


def _partly_zero(kind, name, a, n, context, cfg, what):
    scale = max(float(np.abs(n).max()), 1e-30)
    zero_wrong = (a == 0) & (np.abs(n) > MATCH * scale)
    other_ok = np.abs(a - n)[~zero_wrong].max(initial=0.0) <= MATCH * scale
    if zero_wrong.any() and other_ok:
        k = tuple(int(i) for i in np.argwhere(zero_wrong)[0])
        return (f"{what} is zero at {int(zero_wrong.sum())} of {a.size} entries where it should not be "
                f"(first at index {k}) and right elsewhere: part of it is never filled in backward")
    return None


def _partial_factor(kind, name, a, n, context, cfg, what):
    """Right in one part, a named constant factor off in the rest (e.g. the Q and K
    columns of qkv_weight when the 1/sqrt(d_k) is missing from the scores' backward)."""
    scale = max(float(np.abs(n).max()), 1e-30)
    wrong = np.abs(a - n) > MATCH * scale
    if not wrong.any() or wrong.all():
        return None
    c = _fit_factor(a[wrong], n[wrong])
    label = name_factor(c, cfg, kind) if c is not None else None
    if not label:
        return None
    where = f"{int(wrong.sum())} of {a.size} entries"
    if a.ndim >= 2:
        cols = np.nonzero(wrong.reshape(-1, a.shape[-1]).any(axis=0))[0]
        whole = wrong.reshape(-1, a.shape[-1])[:, cols].all()
        if whole and len(cols) and cols[-1] - cols[0] + 1 == len(cols):
            where = f"columns {cols[0]}:{cols[-1] + 1} of {a.shape[-1]}"
    elif a.ndim == 1:
        idx = np.nonzero(wrong)[0]
        if idx[-1] - idx[0] + 1 == len(idx):
            where = f"entries {idx[0]}:{idx[-1] + 1} of {a.size}"
    return (f"{what} is right except in {where}, which are {c:.4g} x the right values, a factor of "
            f"{label}{_factor_advice(label)}")


def _row_constant(kind, name, a, n, context, cfg, what):
    """The input gradient off by one value per position, the same for every feature:
    a normalisation's backward without its mean term."""
    if name != "x" or a.ndim < 2 or a.shape[-1] < 2:
        return None
    diff = (a - n).reshape(-1, a.shape[-1])
    scale = max(float(np.abs(n).max()), 1e-30)
    if float(np.abs(diff).max()) <= MATCH * scale or not _close(diff, diff.mean(axis=-1, keepdims=True), scale):
        return None
    return (f"{what} is off by one value per position, the same for every feature (the error is constant along "
            "the last axis): a term averaged over the features is missing; in a normalisation's backward that is "
            "the mean term: dx = rstd * (dxhat - mean(dxhat) - xhat * mean(dxhat * xhat)), means over the last axis")


def _row_centred(kind, name, a, n, context, cfg, what):
    """The input gradient off, per position, by a multiple of the centred input x - mean(x):
    a normalisation's backward without its variance term."""
    x = context.get("x")
    if name != "x" or x is None or np.shape(x) != a.shape or a.ndim < 2 or a.shape[-1] < 3:
        return None
    xc = np.asarray(x, dtype=np.float64).reshape(-1, a.shape[-1])
    xc = xc - xc.mean(axis=-1, keepdims=True)
    diff = (a - n).reshape(xc.shape)
    scale = max(float(np.abs(n).max()), 1e-30)
    if float(np.abs(diff).max()) <= MATCH * scale:
        return None
    c = (diff * xc).sum(axis=-1, keepdims=True) / np.maximum((xc * xc).sum(axis=-1, keepdims=True), 1e-300)
    if not _close(diff, c * xc, scale):
        return None
    return (f"{what} is off, at each position, by a multiple of the centred input x - mean(x): the variance "
            "(standard deviation) term is missing or wrong; in a normalisation's backward it is "
            "- xhat * mean(dxhat * xhat) (the std depends on x too)")


def _unnormalised_scale(kind, name, a, n, context, cfg, what):
    """A normalisation's scale (gamma) gradient summed from the centred input x - mean(x), not from the
    normalised xhat = (x - mean) / sqrt(var + eps) that forward multiplies it by."""
    x, g = context.get("x"), context.get("g")
    if name == "x" or x is None or g is None or np.shape(g) != np.shape(x) or a.size != np.shape(x)[-1]:
        return None
    D = a.size
    xc = np.asarray(x, dtype=np.float64).reshape(-1, D)
    xc = xc - xc.mean(axis=-1, keepdims=True)
    summed = (np.asarray(g, dtype=np.float64).reshape(-1, D) * xc).sum(axis=0).reshape(a.shape)
    if _close(a, n) or not _close(a, summed):
        return None
    return (f"{what} is sum(grad_out * (x - mean(x))), the centred input: forward multiplies gamma by the "
            "normalised xhat = (x - mean) / sqrt(var + eps), so its gradient is sum(grad_out * xhat) over every "
            "axis but the last")


def _slightly_off(kind, name, a, n, context, cfg, what):
    """Most entries off by a tiny relative amount: no term is missing, a constant differs."""
    scale = max(float(np.abs(n).max()), 1e-30)
    err = np.abs(a - n)
    worst = float(err.max())
    if worst > MATCH * scale or worst == 0 or np.mean(err > 0.1 * worst) < 0.5:
        return None
    return (f"{what} is off by a tiny relative amount (at most {worst / scale:.2g} of its size) in most entries: "
            "no term is missing, a constant differs slightly between forward and backward, e.g. eps "
            "(sqrt(var + eps) in forward but sqrt(var) + eps, or no eps, in backward) or a rounded constant")


# ---- forward outputs (the `reference` check) -----------------------------------

def factor_pattern(got, want, cfg, what="your output", kind=None):
    """'your output is c x the reference (...)' when got = c * want, else None."""
    got = np.asarray(got, dtype=np.float64)
    want = np.asarray(want, dtype=np.float64)
    if got.ndim == 0:
        if want == 0:
            return None
        c = float(got / want)
        label = name_factor(c, cfg, kind)
        return f"{what} is {c:.4g} x the reference: a factor of {label}{_factor_advice(label)}" if label else None
    c = _fit_factor(got, want)
    if c is None:
        diff = (got - want).reshape(-1, got.shape[-1])
        if got.ndim >= 2 and diff.shape[0] > 1 and np.abs(diff).max() > 0 and _close(diff, diff[:1], None):
            return (f"{what} differs from the reference by the same vector at every position: a bias is "
                    "missing, added twice, or taken from the wrong parameter")
        return None
    if abs(c + 1) <= MATCH:
        return f"{what} is the negative of the reference: the sign is flipped"
    label = name_factor(c, cfg, kind)
    tail = f", a constant factor of {label}{_factor_advice(label)}" if label else ": a constant factor"
    return f"{what} is {c:.4g} x the reference{tail}"


def position_pattern(got, want, atol, causal_attention=False, padded=None):
    """Which samples / time positions differ, when that says something. causal_attention: position 0 attends
    to itself alone (its output does not depend on the scores); padded: per sample, whether some of its keys
    are padding (a key padding mask given to forward), or None."""
    got, want = np.asarray(got), np.asarray(want)
    if got.ndim < 2:
        return None
    err = np.abs(got - want).reshape(got.shape[0], got.shape[1], -1).max(axis=2) > atol   # (B, T)
    if not err.any():
        return None
    by_b = err.any(axis=1)
    if got.shape[0] > 1 and not by_b.all():
        which = [int(b) for b in np.nonzero(by_b)[0]]
        if padded is not None and np.array_equal(by_b, np.asarray(padded, bool)):
            return (f"only the sample(s) with padded keys ({which}) differ: the key padding mask is applied wrong "
                    "(on another axis than the keys', broadcast as (B, S) against (B, H, T, S) without [:, None, "
                    "None, :], or as a multiplication instead of a -inf fill before the softmax)")
        return (f"only sample(s) {which} of the batch differ: something mixes "
                "the samples (a reshape across the batch axis, or state kept between calls)")
    by_t = err.any(axis=0)
    if got.shape[1] > 1 and not by_t[0] and by_t[1:].any():
        later = [int(t) for t in np.nonzero(by_t)[0]]
        if causal_attention:
            return (f"position 0 is right but positions {later} differ; position 0 attends to itself alone, so its "
                    "output does not depend on the attention scores: look at the scores (their 1/sqrt(d_k) scale, "
                    "the split into heads) and the causal mask")
        return (f"position 0 is right but positions {later} differ: something "
                "mixes time steps (the causal mask, or a reshape/transpose across the time axis)")
    return None
