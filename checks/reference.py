"""`reference`: the student's forward output equals gradlab's reference
implementation given the same weights and the same input.

The gradient check cannot see a forward bug whose backward is consistent with
it (a forgotten 1/sqrt(d_k), softmax over the wrong axis, heads merged with a
reshape that mixes time steps, LayerNorm over the batch): this check can.
When the student's output is off, the output of known buggy variants of the
reference is computed too, and a variant that reproduces the student's output
names the cause.
"""
import inspect
import math

import numpy as np

from gradlab.diagnosis.article_variants import VARIANTS as ARTICLE_VARIANTS
from gradlab.diagnosis.causes import factor_pattern, position_pattern
from gradlab.diagnosis.matcher import name_cause
from gradlab.contract.errors import CannotJudge, CheckFailure, CheckSkipped, StudentError
from gradlab.contract.numbers import distinct
from gradlab.contract.kinds import ATTN_WEIGHTS, CAUSAL, DIFFERENTIABLE, LOSS, PROBABILITIES, SMOOTHING, TOKEN_IDS
from gradlab.execution.loader import reference as reference_impl
from gradlab.contract.records import heatmap, table
from gradlab.execution.harness import as_float_array
from gradlab.execution.subject import (IGNORE_INDEX, SMOOTHING_EPSILON, accepts_keyword, call_cross_entropy,
                                      call_softmax, copies, loss_inputs, loss_options, takes_ignore_index,
                                      with_ignored)
from gradlab.contract.suite import Outcome, check
from gradlab.execution.weights import BY_SHAPE, load_reference, named_params, random_reference, reference_module
from gradlab.numerics.repeatable import require_repeatable
from gradlab.numerics.tolerance import IDIOM_EPS, SAFETY, computed_dtype, loss_row_bounds, smoothing_bounds, tolerance

# |student - reference| <= atol + rtol * (largest |reference| entry), rtol and atol from the
# "forward" row of gradlab.numerics.tolerance. The reference is computed in float64 from the very
# numbers the student gets, so float32 students are judged by float32's own rounding, not by a
# second rounding; by the coarsest float the student actually computed in (a module that works
# in float32 whatever cfg.dtype says is correct, and judged by float32 rounding).


def _tolerance(cfg, *outputs):
    return tolerance("forward", cfg.np_dtype, *outputs)


def _own_rounding(kind, cfg, ref, inputs, want, out):
    """What a module computing in a coarser float than float64 (out's dtype) may differ by beyond the table's
    rtol: SAFETY x the largest difference between gradlab's reference run in that dtype, on the same weights
    and inputs, and in float64 (`want`). A well-conditioned forward rounds at ~eps of its scale, inside the
    table's bar; an ill-conditioned piece (a LayerNorm over 2 close features, d_model = 2) rounds far above
    it, and the reference itself would not pass. A float64 output of float32 numbers computes in float32
    (CONTRACT §6) and is measured so. 0.0 for float64."""
    if out.dtype.kind != "f":
        return 0.0
    dtype = computed_dtype([out], out.dtype)
    if dtype == np.float64:
        return 0.0
    low = reference_module(kind, cfg.replace(dtype=np.dtype(dtype).name))
    weights = named_params(ref)
    try:
        for name, array in named_params(low).items():
            array[...] = weights[name]
        rounded = low.forward(*[a.astype(dtype) if spec.role == "float" else a
                                for spec, a in zip(kind.input_specs(), inputs)])
    except Exception:     # gradlab's own reference in a dtype it cannot run in: nothing measured
        return 0.0
    diff = np.abs(np.asarray(rounded, dtype=np.float64) - want)
    return SAFETY * float(diff.max(initial=0.0)) if np.all(np.isfinite(diff)) else 0.0


@check("reference", any_of={DIFFERENTIABLE, PROBABILITIES}, forms={"module", "function"}, order=30,
       summary="forward output equals gradlab's reference implementation given the same weights")
def reference(subject, rng):
    kind = subject.kind
    if kind.form == "module":
        return _module(subject, rng)
    if kind.has(LOSS):
        return _loss(subject, rng)
    return _softmax(subject, rng)


# ---- module kinds -------------------------------------------------------------

def _module(subject, rng):
    kind, cfg = subject.kind, subject.cfg
    ref = random_reference(kind, cfg, rng, dtype="float64")
    module, slots = subject.fresh(rng, randomize=False)
    ref_params = {name: value.astype(cfg.np_dtype) for name, value in named_params(ref).items()}
    try:
        how = load_reference(subject, module, slots, ref_params)
    except CheckSkipped as e:
        # the one check that compares the forward's numbers: left out, a forward bug that backward matches (no
        # 1/sqrt(d_k) in either) passed every other check, exit 0. Not a pass: an error that says what to add
        why = str(e).removeprefix(f"{kind.name}: ")
        raise CannotJudge(f"the forward cannot be compared with the reference: {why}") from None
    inputs = subject.make_inputs(rng)
    x = inputs[0]
    # the student gets copies: a forward that edits x in place would otherwise move the reference's input
    # too, and the report would blame the output; input_mutation names the in-place edit
    out = subject.forward(module, *copies(inputs))
    attn_first = subject.attribute(module, "attn_weights")
    attn_first = attn_first.copy() if isinstance(attn_first, np.ndarray) else None
    require_repeatable("forward", out, subject.forward(module, *copies(inputs)), "its output against the reference")
    # parameters kept in float16 (whatever cfg.dtype says) round the weights copied in: judged by float16
    tol = _tolerance(cfg, out, *[sl.value for sl in slots])
    got = out.astype(np.float64)
    want = ref.forward(*_in_float64(kind, subject.complete(inputs)))
    rows = [_row("output", got, want, tol, _own_rounding(kind, cfg, ref, subject.complete(inputs), want, out))]
    attn_note = ""
    if kind.has(ATTN_WEIGHTS):
        theirs = attn_first
        if isinstance(theirs, np.ndarray) and theirs.shape == ref.attn_weights.shape:
            rows.append(_row("attn_weights", theirs.astype(np.float64), ref.attn_weights, tol))
            a = rows[-1]
            ta, tr = distinct(a["got"], a["reference"])
            attn_note = ("; attn_weights match the reference, so the difference arises after the softmax "
                         "(attn_weights @ V, merging the heads, out_weight)" if a["ok"] else
                         f"; attn_weights already differ (worst at (batch, head, query, key) {tuple(a['worst'])}: "
                         f"got {ta}, reference {tr}), so look before the softmax")
    metrics = {"max_error": rows[0]["error"], "tolerance": rows[0]["tolerance"], "weights": how}
    details = {"views": [table("per-output error (relative to the output's scale)", rows),
                         _heatmap(got, want, rows[0])]}
    if rows[0]["ok"]:
        moved = _moved_fields(subject, rng)
        return Outcome(f"matches the reference to {rows[0]['error']:.1e} of its scale ({tol.describe()}); "
                       f"weights copied {how}" + (f"; and again with {moved}" if moved else ""), metrics, details)
    r = rows[0]
    where = _where(r["worst"], ["batch", "time", "vocab" if kind.name == "lm" else "dim"])
    hint = _explain(kind, cfg, ref, x if len(inputs) == 1 else _in_float64(kind, subject.complete(inputs)),
                    got, want, r["allowed"])
    tg, tr = distinct(r["got"], r["reference"])
    raise CheckFailure(
        f"{kind.name}: forward output differs from gradlab's reference with the same weights: worst at {where}: "
        f"got {tg}, reference {tr} (|diff| {r['abs_error']:.2e}, allowed {r['allowed']:.1e}: {tol.describe()} "
        f"of the output scale {r['scale']:.3g}){attn_note}" + (f"; {hint}" if hint else "")
        + (f". The weights were {how}: if that pairs the wrong layers (a weight stored as (d_out, d_in), used as "
           "x @ W.T, has the shape of the other layer's), register a param_map function that copies each "
           "ref[...] (transposed: .T) into its parameter" if how.startswith(BY_SHAPE) else ""),
        metrics, details)


def _other_heads(cfg):
    """Another head count that divides d_model (None when there is none)."""
    return next((h for h in (2 * cfg.num_heads, cfg.num_heads // 2, 1)
                 if h >= 1 and h != cfg.num_heads and cfg.d_model % h == 0), None)


# cfg fields a module must read from cfg, each with another value to check it at: a module that hard-codes
# the default (LayerNorm(d, eps=1e-5), num_heads = 2) matches the reference at the default only
MOVED = {"eps": lambda cfg: 0.1 if cfg.eps != 0.1 else 0.01, "num_heads": _other_heads}


def _moved_fields(subject, rng):
    """After a match at cfg: the same comparison with each field of MOVED at its other value, for the fields
    the reference's output depends on (moving it alone moves the reference's output). Fails naming the field;
    returns the words for the fields checked ("eps = 0.1, num_heads = 4") or ""."""
    kind, cfg = subject.kind, subject.cfg
    checked = []
    # one set of weights and one input for every field: the reference at cfg, and what it outputs there
    ref = random_reference(kind, cfg, rng, dtype="float64")
    inputs = subject.make_inputs(rng)
    args = _in_float64(kind, subject.complete(inputs))
    base = ref.forward(*args)
    ref_params = named_params(ref)
    for field, other in MOVED.items():
        value = other(cfg)
        if value is None:
            continue
        moved_cfg = cfg.replace(**{field: value})
        moved_ref = random_reference(kind, moved_cfg, np.random.default_rng(0), dtype="float64")
        try:
            for name, array in named_params(moved_ref).items():
                array[...] = ref_params[name]
        except (KeyError, ValueError):       # the field moves the reference's shapes: compared as they are
            moved_ref = random_reference(kind, moved_cfg, rng, dtype="float64")
        want = moved_ref.forward(*args)
        if want.shape == base.shape and np.allclose(want, base, rtol=1e-9, atol=0):
            continue                          # the reference does not read it: nothing to tell
        second = subject.with_cfg(moved_cfg)
        module, slots = second.fresh(rng, randomize=False)
        load_reference(second, module, slots, {n: v.astype(cfg.np_dtype) for n, v in named_params(moved_ref).items()})
        out = second.forward(module, *copies(inputs))
        tol = _tolerance(moved_cfg, out, *[sl.value for sl in slots])
        rounding = _own_rounding(kind, moved_cfg, moved_ref, second.complete(inputs), want, out)
        row = _row("output", out.astype(np.float64), want, tol, rounding)
        checked.append(f"{field} = {value:g}")
        if row["ok"]:
            continue
        base_row = _row("output", out.astype(np.float64), base, tol)
        tg, tr = distinct(row["got"], row["reference"])
        known = None if base_row["ok"] else _explain(
            kind, moved_cfg, moved_ref, inputs[0] if len(inputs) == 1 else args, out.astype(np.float64), want,
            row["allowed"])
        cause = (f"your output is the reference's at {field} = {getattr(cfg, field):g}: build(cfg) does not pass "
                 f"cfg.{field} on (its {field} is hard-coded, in the module or in build)" if base_row["ok"] else
                 known or f"does build(cfg) pass cfg.{field} on to every part of the module?")
        raise CheckFailure(
            f"{kind.name}: forward matches gradlab's reference at {field} = {getattr(cfg, field):g}, but with "
            f"cfg.{field} = {value:g} it differs: worst at "
            f"{_where(row['worst'], ['batch', 'time', 'vocab' if kind.name == 'lm' else 'dim'])}: got {tg}, "
            f"reference {tr} (|diff| {row['abs_error']:.2e}, allowed {row['allowed']:.1e}); {cause}",
            {"max_error": row["error"], "tolerance": row["tolerance"], "field": field, "value": value},
            {"views": [table(f"output error with {field} = {value:g}", [row])]})
    return ", ".join(checked)


def _in_float64(kind, inputs):
    return tuple(a.astype(np.float64) if spec.role == "float" else a for spec, a in zip(kind.input_specs(), inputs))


def _row(name, got, want, tol, allow=0.0):
    """One compared output. tol: a Tol; allow: an extra allowance (absolute, per element or one
    number) for what a sound idiom can change, e.g. eps inside a log. "ratio": the error in
    multiples of what is allowed (<= 1 passes)."""
    err = np.abs(got - want)
    scale = float(np.abs(want).max(initial=0.0))
    allowed = tol.allowed(scale) + np.asarray(allow, dtype=np.float64)
    ratio = np.broadcast_to(np.where(np.isnan(err), np.inf, err / np.maximum(allowed, 1e-300)), err.shape)
    k = int(np.argmax(ratio)) if ratio.size else 0
    worst = tuple(int(i) for i in np.unravel_index(k, err.shape)) if err.ndim else ()
    return {"output": name, "shape": list(np.shape(want)), "error": float(err.max(initial=0.0)) / max(scale, 1e-300),
            "tolerance": tol.rtol, "ok": bool(float(ratio.max(initial=0.0)) <= 1.0), "worst": list(worst),
            "got": float(np.ravel(got)[k]), "reference": float(np.ravel(want)[k]),
            "abs_error": float(np.ravel(err)[k]), "scale": scale,
            "allowed": float(np.ravel(np.broadcast_to(allowed, err.shape))[k]), "ratio": float(np.ravel(ratio)[k])}


def _where(index, axes):
    return "(" + ", ".join(f"{a} {i}" for a, i in zip(axes, index)) + ")"


def _heatmap(got, want, row):
    """|student - reference| over (time, last axis) for the worst sample, drawn
    against the absolute tolerance the verdict used (relative tolerance x scale)."""
    diff = np.abs(np.asarray(got) - np.asarray(want))
    tol = max(row["tolerance"] * row["scale"], 1e-300)
    if diff.ndim < 2:
        return heatmap(f"|student - reference| for {row['output']}", [np.atleast_1d(diff).tolist()],
                       tolerance=tol)
    b = row["worst"][0] if diff.ndim == 3 else 0
    mat = diff[b] if diff.ndim == 3 else diff.reshape(diff.shape[0], -1)
    return heatmap(f"|student - reference| of {row['output']}, sample {b}", mat.tolist(),
                   xlabel="output dim", ylabel="time", tolerance=tol)


def _explain(kind, cfg, ref, x, got, want, atol):
    """The likely cause in words, or "" when no known pattern fits. atol: what the comparison allows."""
    inp = x if kind.has(TOKEN_IDS) or isinstance(x, tuple) else x.astype(np.float64)   # a tuple: all inputs
    hint = _best_variant(got, [(h, (lambda v: lambda: v(ref, inp, cfg))(v)) for h, v in VARIANTS.get(kind.name, ())],
                         atol, float(np.abs(got - want).max()))
    if hint:
        return hint
    hint = factor_pattern(got, want, cfg, what="your output", kind=kind)
    if hint:
        return hint
    names = [spec.name for spec in kind.input_specs()]
    mask = x[names.index("key_padding_mask")] if isinstance(x, tuple) and "key_padding_mask" in names else None
    padded = np.asarray(mask).reshape(len(mask), -1).any(axis=1) if isinstance(mask, np.ndarray) else None
    return position_pattern(got, want, atol, causal_attention=kind.has(CAUSAL) and kind.has(ATTN_WEIGHTS),
                            padded=padded) or ""


# ---- buggy variants of the reference forwards: (hint, fn(ref, x, cfg)) -------

def _attention(p, x, H, scale="dk", axis=-1, mask=True, mask_after=False, split="ok", merge="ok",
               layout="qkv"):
    B, T, D = x.shape
    dk = D // H
    qkv = x @ p["qkv_weight"] + p["qkv_bias"]                            # (B, T, 3D)
    if layout == "qkv":
        q, k, v = np.split(qkv, 3, axis=-1)
    elif layout == "per_head":                                           # [q_h k_h v_h] per head
        q, k, v = (a.reshape(B, T, D) for a in np.moveaxis(qkv.reshape(B, T, H, 3, dk), 3, 0))
    else:                                                                # heads interleaved column by column
        q, k, v = (a.reshape(B, T, dk, H).swapaxes(2, 3).reshape(B, T, D) for a in np.split(qkv, 3, axis=-1))

    def heads(a):
        if split == "reshape":                                           # no transpose: mixes time steps
            return a.reshape(B, H, T, dk)
        return a.reshape(B, T, H, dk).transpose(0, 2, 1, 3)

    q, k, v = heads(q), heads(k), heads(v)
    s = {"dk": 1 / math.sqrt(dk), "none": 1.0, "dk1": 1 / dk, "D": 1 / math.sqrt(D)}[scale]
    scores = q @ k.transpose(0, 1, 3, 2) * s
    causal = np.tril(np.ones((T, T), dtype=bool))
    if mask and not mask_after:
        scores = np.where(causal, scores, -np.inf)
    e = np.exp(scores - scores.max(axis=axis, keepdims=True))
    A = e / e.sum(axis=axis, keepdims=True)
    if mask_after:
        A = A * causal
    A = np.nan_to_num(A)
    ctx = A @ v                                                          # (B, H, T, dk)
    ctx = ctx.reshape(B, T, D) if merge == "reshape" else ctx.transpose(0, 2, 1, 3).reshape(B, T, D)
    return ctx @ p["out_weight"] + p["out_bias"]


def _attn(**kw):
    return lambda ref, x, cfg: _attention(ref.params, x, cfg.num_heads, **kw)


def _layernorm(p, x, eps, axis=-1, ddof=0, eps_outside=False, swap=False):
    mu = x.mean(axis=axis, keepdims=True)
    var = x.var(axis=axis, ddof=ddof, keepdims=True)
    xhat = (x - mu) / (np.sqrt(var) + eps if eps_outside else np.sqrt(var + eps))
    g, b = (p["beta"], p["gamma"]) if swap else (p["gamma"], p["beta"])
    return g * xhat + b


def _ln(**kw):
    return lambda ref, x, cfg: _layernorm(ref.params, x, cfg.eps, **kw)


def _ffn(act):
    def run(ref, x, cfg):
        p = ref.params
        h = x @ p["w1"] + p["b1"]
        return act(h) @ p["w2"] + p["b2"]
    return run


def _gelu_erf(h):
    from scipy.special import erf
    return 0.5 * h * (1 + erf(h / math.sqrt(2)))


def _gelu_tanh(h):
    return 0.5 * h * (1 + np.tanh(math.sqrt(2 / math.pi) * (h + 0.044715 * h ** 3)))


def _block(order):
    def run(ref, x, cfg):
        attn = lambda a: ref.attn.forward(a)          # noqa: E731 (the reference children, with their weights)
        ffn = lambda a: ref.ffn.forward(a)            # noqa: E731
        ln1, ln2 = ref.ln1.forward, ref.ln2.forward
        if order == "post_ln":
            h = ln1(x + attn(x))
            return ln2(h + ffn(h))
        if order == "no_residual":
            return ffn(ln2(attn(ln1(x))))
        if order == "no_attn_residual":
            h = attn(ln1(x))
            return h + ffn(ln2(h))
        if order == "no_ffn_residual":
            return ffn(ln2(x + attn(ln1(x))))
        if order == "normed_residual":
            a = ln1(x)
            h = a + attn(a)
            b = ln2(h)
            return b + ffn(b)
        if order == "parallel":
            return x + attn(ln1(x)) + ffn(ln2(x))
        h = x + attn(ln1(x))                           # "same_ln": ln1 used twice
        return h + ffn(ln1(h))
    return run


def _lm(change):
    def run(ref, ids, cfg):
        E, P = ref.params["token_embedding"], ref.params["pos_embedding"]
        T = ids.shape[1]
        x = E[ids] * (math.sqrt(E.shape[1]) if change == "scaled" else 1)
        if change != "no_pos":
            x = x + (P[1:T + 1] if change == "pos_shift" else P[:T])
        for block in ref.blocks:
            x = block.forward(x)
        if change != "no_ln_f":
            x = ref.ln_f.forward(x)
        return x @ E.T
    return run


_SPLIT_HINT = ("your heads are split with a plain reshape (B, T, D) -> (B, H, T, d_k), which mixes time steps; "
               "reshape to (B, T, H, d_k) and then transpose to (B, H, T, d_k)")

VARIANTS = {
    **ARTICLE_VARIANTS,     # encoder and decoder layers: variant(ref, inputs, cfg), forward's whole input tuple
    "attention": [
        ("your output matches attention without the 1/sqrt(d_k) scale on the scores: multiply q @ k^T by "
         "1/sqrt(d_k)", _attn(scale="none")),
        ("your output matches attention with scores scaled by 1/d_k; the scale is 1/sqrt(d_k)", _attn(scale="dk1")),
        ("your output matches attention with scores scaled by 1/sqrt(d_model); the scale is 1/sqrt(d_k), "
         "d_k = d_model / num_heads", _attn(scale="D")),
        ("your output matches a softmax over the query axis (axis=-2); each row of scores (one query, all keys) "
         "must be normalised: softmax over the last axis", _attn(axis=-2)),
        ("your output matches attention without the causal mask: position t must not see keys after t",
         _attn(mask=False)),
        ("your output matches a mask applied after the softmax (future weights zeroed, rows no longer sum to 1); "
         "mask the scores with -inf before the softmax", _attn(mask_after=True)),
        ("your heads are merged with a plain reshape (B, H, T, d_k) -> (B, T, D), which mixes time steps; "
         "transpose to (B, T, H, d_k) first, then reshape", _attn(merge="reshape")),
        (_SPLIT_HINT, _attn(split="reshape")),
        (_SPLIT_HINT + "; and merged back the same way", _attn(split="reshape", merge="reshape")),
        ("your module reads qkv_weight's columns per head ([q k v] of head 0, then head 1, ...); the reference "
         "layout is [Q | K | V] with the heads contiguous inside each (CONTRACT §3)", _attn(layout="per_head")),
        ("your module takes each head's columns interleaved (column j belongs to head j % H); the reference "
         "layout has head h in columns h*d_k:(h+1)*d_k of Q, K and V", _attn(layout="interleaved")),
    ],
    "layernorm": [
        ("your output matches LayerNorm over the batch axis (axis 0); normalise over the last axis "
         "(each token's features)", _ln(axis=0)),
        ("your output matches normalising over batch and time (axes 0, 1) like BatchNorm; LayerNorm normalises "
         "over the last axis only", _ln(axis=(0, 1))),
        ("your output matches normalising over time and features (axes 1, 2); LayerNorm normalises over the last "
         "axis only", _ln(axis=(1, 2))),
        ("your output matches the unbiased variance (ddof=1); LayerNorm divides by D (np.var's default)", _ln(ddof=1)),
        ("your output matches (x - mean) / (std + eps); eps goes inside the square root: sqrt(var + eps)",
         _ln(eps_outside=True)),
        ("your output matches gamma and beta swapped: gamma scales, beta shifts", _ln(swap=True)),
    ],
    "ffn": [
        ("your output matches GELU with the exact erf; the reference uses the tanh approximation "
         "0.5 h (1 + tanh(sqrt(2/pi) (h + 0.044715 h^3))) (a mild difference, but a real one)", _ffn(_gelu_erf)),
        ("your output matches ReLU; the reference FFN uses GELU (tanh approximation)", _ffn(lambda h: np.maximum(h, 0))),
        ("your output matches GELU as h * sigmoid(1.702 h); the reference uses the tanh approximation",
         _ffn(lambda h: h / (1 + np.exp(-1.702 * h)))),
        ("your output matches an FFN without activation", _ffn(lambda h: h)),
        ("your output matches GELU with the tanh approximation, but cfg.activation is 'relu'", _ffn(_gelu_tanh)),
    ],
    "positional": [
        ("your output matches x + weight[1:T+1]: positions count from 0, add weight[:T]",
         lambda ref, x, cfg: x + ref.params["weight"][1:x.shape[1] + 1]),
    ],
    "block": [
        ("your output matches a Post-LN block (LayerNorm after each residual); the reference is Pre-LN: "
         "x + attn(ln1(x)), then x + ffn(ln2(x))", _block("post_ln")),
        ("your output matches a block without residual connections: add the input back after attn and after ffn",
         _block("no_residual")),
        ("your output matches a block without the residual around attention: h = x + attn(ln1(x))",
         _block("no_attn_residual")),
        ("your output matches a block without the residual around the FFN: out = h + ffn(ln2(h))",
         _block("no_ffn_residual")),
        ("your output matches residuals that add the normalised input ln(x) instead of x", _block("normed_residual")),
        ("your output matches ln1 used before the FFN too; the FFN branch has its own ln2", _block("same_ln")),
        ("your output matches a parallel block, x + attn(ln1(x)) + ffn(ln2(x)) (GPT-J's): the FFN branch reads "
         "ln2(x) where the reference's reads ln2(h), h = x + attn(ln1(x)) the output of the attention residual",
         _block("parallel")),
    ],
    "lm": [
        ("your output matches the LM without the final LayerNorm ln_f before the output projection", _lm("no_ln_f")),
        ("your output matches the LM without the positional embedding: x = token_embedding[ids] + pos_embedding[:T]",
         _lm("no_pos")),
        ("your output matches token embeddings scaled by sqrt(d_model); the reference adds them unscaled",
         _lm("scaled")),
        ("your output matches pos_embedding[1:T+1]; positions count from 0", _lm("pos_shift")),
    ],
}


# ---- softmax ------------------------------------------------------------------

def _softmax(subject, rng):
    cfg = subject.cfg
    x = (2 * rng.standard_normal(subject.kind.input_shape(cfg))).astype(cfg.np_dtype)
    out = call_softmax(subject, x.copy())   # a copy: a softmax that edits x in place is input_mutation's finding
    require_repeatable("softmax(x)", out, call_softmax(subject, x.copy()), "its output against the reference")
    tol = _tolerance(cfg, out)
    got = out.astype(np.float64)
    want = reference_impl().get(subject.kind.name).target(x.astype(np.float64))
    row = _row("softmax(x)", got, want, tol)
    details = {"views": [table("per-output error", [row]), _heatmap(got, want, row)]}
    metrics = {"max_error": row["error"], "tolerance": tol.rtol}
    if row["ok"]:
        axes = _softmax_axes(subject, x)
        return Outcome(f"matches the reference to {row['error']:.1e} of its scale ({tol.describe()}), and with "
                       f"axis={', '.join(str(a) for a in axes)} on a {x.ndim}-d input", metrics, details)
    x64 = x.astype(np.float64)
    variants = [
        ("your softmax normalises over axis 0 (the batch); it must normalise over the last axis (axis=-1)",
         lambda: _sm(x64, 0)),
        ("your softmax normalises over axis 1; it must normalise over the last axis (axis=-1)", lambda: _sm(x64, 1)),
        ("your softmax normalises over the whole array; each row (last axis) must sum to 1",
         lambda: np.exp(x64) / np.exp(x64).sum()),
        ("your softmax returns exp(x) without dividing by the row sum", lambda: np.exp(x64)),
        ("your softmax returns log-probabilities (log_softmax)", lambda: np.log(_sm(x64, -1))),
    ]
    hint = _best_variant(got, variants, row["allowed"], float(np.abs(got - want).max())) \
        or factor_pattern(got, want, cfg, what="your softmax", kind=subject.kind) or ""
    where = _where(row["worst"], ["batch", "time", "class"])
    tg, tr = distinct(row["got"], row["reference"])
    raise CheckFailure(f"softmax: output differs from the reference at {where}: got {tg}, reference "
                       f"{tr} ({tol.describe()})" + (f"; {hint}" if hint else ""),
                       metrics, details)


AXES = (0, 1, 2, -1, -2, -3)     # every axis of a 3-d input, by its positive and its negative name


def _softmax_axes(subject, x):
    """softmax(x, axis=a) for every axis of the 3-d input against the reference along that axis
    (CONTRACT §3: softmax(x, axis=-1)). Returns the axes checked; raises naming the first wrong one."""
    cfg = subject.cfg
    if not accepts_keyword(subject, "axis"):
        other = _second_parameter(subject.registration.target)
        if other is not None:
            raise CheckFailure(f"softmax: your function's second argument is named {other!r}, not axis; gradlab "
                               "passes it by name, as CONTRACT §3's signature softmax(x, axis=-1) calls it: rename it "
                               "axis (keep the default -1)")
        raise CheckFailure("softmax: your function takes no axis argument; CONTRACT §3's signature is "
                           "softmax(x, axis=-1): normalise along `axis` (max and sum with axis=axis, keepdims=True)")
    x64 = x.astype(np.float64)
    for axis in AXES:
        what = f"softmax(x, axis={axis})"
        out = as_float_array(subject.call(x.copy(), axis=axis, what=what), what, x.shape)
        tol = _tolerance(cfg, out)
        got = out.astype(np.float64)
        want = _sm(x64, axis)
        row = _row(what, got, want, tol)
        if row["ok"]:
            continue
        variants = [
            (f"your softmax normalises over the last axis whatever axis says; with axis={axis} it must take "
             f"the max and the sum over axis {axis}", lambda: _sm(x64, -1)),
            (f"your softmax subtracts the maximum over the last axis whatever axis says; with axis={axis} the "
             f"maximum must be taken over axis {axis} too (x.max(axis=axis, keepdims=True)), or the shift is not "
             "constant within what is normalised", lambda: _sm(x64, axis, shift_axis=-1)),
            (f"your softmax sums over the last axis whatever axis says; with axis={axis} the sum must be over "
             f"axis {axis} too", lambda: _sm(x64, axis, sum_axis=-1)),
        ] + [(f"your softmax normalises over axis {b} when asked for axis={axis}", (lambda b: lambda: _sm(x64, b))(b))
             for b in range(x.ndim) if b != axis % x.ndim and b != x.ndim - 1]
        hint = _best_variant(got, variants, row["allowed"], float(np.abs(got - want).max()))
        tg, tr = distinct(row["got"], row["reference"])
        raise CheckFailure(
            f"softmax: {what} differs from the reference at index {tuple(row['worst'])}: got {tg}, reference {tr} "
            f"({tol.describe()}); the entries along axis {axis} must each be normalised to sum to 1"
            + (f"; {hint}" if hint else ""), {"axis": axis, "max_error": row["error"], "tolerance": tol.rtol},
            {"views": [table(f"{what}: error", [row])]})
    return AXES


def _second_parameter(fn):
    """The name of fn's second positional parameter (dim, for a PyTorch-minded softmax), or None."""
    try:
        params = list(inspect.signature(fn).parameters.values())
    except (TypeError, ValueError):
        return None
    positional = [p for p in params if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    return positional[1].name if len(positional) > 1 else None


def _sm(x, axis, shift_axis=None, sum_axis=None):
    """softmax over axis; shift_axis / sum_axis: the axis a buggy variant takes the max / the sum over."""
    e = np.exp(x - x.max(axis=axis if shift_axis is None else shift_axis, keepdims=True))
    return e / e.sum(axis=axis if sum_axis is None else sum_axis, keepdims=True)


def _best_variant(got, variants, atol, err_ref):
    """The hint of the variant that reproduces `got` to atol (the comparison's own allowance),
    by the one known-bug matcher; err_ref: the correct reference's max |difference|."""
    candidates = []
    for hint, fn in variants:
        try:
            with np.errstate(all="ignore"):
                out = np.asarray(fn(), dtype=np.float64)
        except (ValueError, IndexError, FloatingPointError):
            continue
        if out.shape != np.shape(got) or not np.isfinite(out).all():
            continue
        candidates.append((hint, float(np.abs(np.asarray(got) - out).max()) / atol, err_ref / atol))
    return name_cause(candidates)


# ---- cross-entropy ------------------------------------------------------------

def _loss(subject, rng):
    """Loss and grad_logits, without and with ignore_index, against the reference.

    A sound guard inside the log (np.log(p + eps), np.clip(p, eps, 1)) with eps up to IDIOM_EPS
    changes row r's loss by at most eps / p[target] and its gradient by that fraction: allowed,
    per row, from the reference's own probabilities on this input."""
    kind, cfg = subject.kind, subject.cfg
    ref_fn = reference_impl().get(kind.name).target
    logits, targets = loss_inputs(subject, rng)
    padded = with_ignored(targets, rng)
    # every use of ignore_index (CONTRACT §3): absent, an id inside the vocabulary, PyTorch's default -100
    runs = []
    padding = takes_ignore_index(subject)    # without it: unpadded targets only (see `signature`)
    for ignore, tg in ((None, targets), (IGNORE_INDEX, padded),
                       (TORCH_IGNORE, np.where(padded == IGNORE_INDEX, TORCH_IGNORE, padded)))[:3 if padding else 1]:
        try:
            loss, grad = call_cross_entropy(subject, logits.copy(), tg.copy(), ignore)   # copies: see _softmax
        except StudentError as e:
            if ignore != TORCH_IGNORE or "no ignore_index argument" in str(e):
                raise
            raise StudentError(f"with ignore_index={ignore} (PyTorch's default padding id, outside the vocabulary: "
                               f"index nothing with it): {e}", where=e.where) from e.__cause__
        runs.append((ignore, tg, loss, grad))
    require_repeatable(f"{kind.name}(logits, targets)", np.float64(runs[0][2]),
                       np.float64(call_cross_entropy(subject, logits.copy(), targets.copy())[0]),
                       "its loss against the reference")
    tol = _tolerance(cfg, logits, *[grad for *_, grad in runs])
    rows, failures = [], []
    for ignore, tg, loss, grad in runs:
        want_loss, want_grad = ref_fn(logits.astype(np.float64), tg, *loss_options(kind, ignore))
        loss_allow, grad_allow = (smoothing_bounds(logits, tg, SMOOTHING_EPSILON) if kind.has(SMOOTHING)   # every class
                                  else _idiom_allowance(logits, tg, ignore, want_grad))
        suffix = "" if ignore is None else f" with ignore_index={ignore}"
        for name, got, want, allow in ((f"loss{suffix}", np.float64(loss), np.float64(want_loss), loss_allow),
                                       (f"grad_logits{suffix}", grad.astype(np.float64), want_grad, grad_allow)):
            row = _row(name, got, want, tol, allow)
            rows.append(row)
            if not row["ok"]:
                failures.append((row, ignore, tg, loss, grad))
    metrics = {"max_error": max(r["error"] for r in rows), "tolerance": tol.rtol}
    grad_rows = [r for r in rows if r["output"].startswith("grad")]
    worst_grad = max(grad_rows, key=lambda r: r["error"])
    details = {"views": [table("per-output error (relative to each output's scale)", rows),
                         _heatmap_ce(subject, logits, failures, worst_grad)]}
    if not failures:
        which = (f"without ignore_index and with ignore_index={IGNORE_INDEX} and {TORCH_IGNORE}" if padding else
                 "on targets without padding (your function takes no ignore_index: see the signature check)"
                 if "ignore_index" in kind.keyword_args() else "on its targets")
        return Outcome(f"loss and grad_logits match the reference, {which} "
                       f"(max error {metrics['max_error']:.1e} of their scale; {tol.describe()}, and "
                       f"{IDIOM_EPS:.0e} / p[target] per row for an eps inside the log)", metrics, details)
    row, ignore, tg, loss, grad = failures[0]
    x64 = logits.astype(np.float64)
    variants = (_smoothing_variants(x64, tg, ref_fn(x64, tg, *loss_options(kind, ignore))) if kind.has(SMOOTHING)
                else _ce_variants(x64, tg, ignore))
    hint = _ce_hint(row, variants, np.float64(loss), grad.astype(np.float64), cfg)
    tg_, tr = distinct(row["got"], row["reference"])
    if row["output"].startswith("loss"):
        what = f"{row['output']} is {tg_}, reference {tr}"
    else:
        what = (f"{row['output']} differs at {_where(row['worst'], ['batch', 'time', 'class'])}: got "
                f"{tg_}, reference {tr}")
    others = [r["output"] for r, *_ in failures[1:]]
    raise CheckFailure(f"{kind.name}: {what} (|diff| {row['abs_error']:.2e}, allowed {row['allowed']:.1e})"
                       + (f"; {hint}" if hint else "")
                       + (f"; also wrong: {', '.join(others)}" if others else ""), metrics, details)


TORCH_IGNORE = -100     # torch.nn.CrossEntropyLoss's default ignore_index


def _idiom_allowance(logits, targets, ignore, want_grad):
    """(loss allowance, grad_logits allowance per element): what eps <= IDIOM_EPS inside the log can
    change on this input. Row r: the loss term by log(1 + eps / p_r) <= eps / p_r, averaged like the
    loss; its gradient (differentiated exactly, with the eps) by the fraction eps / (p_r + eps)."""
    V = logits.shape[-1]
    bound, keep = loss_row_bounds(logits, targets, ignore)
    loss_allow = float(bound.sum()) / max(int(keep.sum()), 1)
    grad_allow = (np.abs(want_grad).reshape(-1, V) * bound[:, None]).reshape(want_grad.shape)
    return loss_allow, grad_allow


def _heatmap_ce(subject, logits, failures, worst_grad):
    for row, ignore, tg, loss, grad in failures:
        if row["output"].startswith("grad"):
            want = reference_impl().get(subject.kind.name).target(logits.astype(np.float64), tg,
                                                                  *loss_options(subject.kind, ignore))[1]
            return _heatmap(grad.astype(np.float64), want, row)
    return heatmap("|student - reference| of grad_logits", [[0.0]])


def _ce_variants(logits, targets, ignore):
    """(hint, (loss, grad)) of known cross-entropy mistakes."""
    V = logits.shape[-1]
    z = logits.reshape(-1, V)
    t = np.asarray(targets).reshape(-1)
    keep = np.ones(t.shape, bool) if ignore is None else t != ignore
    N, n = t.size, max(int(keep.sum()), 1)
    logp = z - z.max(-1, keepdims=True)
    logp = logp - np.log(np.exp(logp).sum(-1, keepdims=True))
    tt = np.where(keep, t, 0)
    nll = -logp[np.arange(N), tt]
    p = np.exp(logp)
    onehot = np.zeros_like(p)
    onehot[np.arange(N), tt] = 1
    g_all = p - onehot
    g_keep = g_all * keep[:, None]
    shape = logits.shape
    mean_loss = (nll * keep).sum() / n
    out = [
        ("the loss is summed over positions instead of averaged: divide by the number of targets",
         ((nll * keep).sum(), (g_keep / n).reshape(shape))),
        ("grad_logits is not divided by the number of targets (the loss is a mean, so its gradient is "
         "(softmax - one_hot) / N)", (mean_loss, g_keep.reshape(shape))),
        ("the loss is summed and grad_logits not divided: both should be averaged over the targets",
         ((nll * keep).sum(), g_keep.reshape(shape))),
    ]
    if ignore is not None:
        out += [
            ("ignored positions are counted in the mean: divide by the number of targets that are not "
             "ignore_index", ((nll * keep).sum() / N, (g_keep / N).reshape(shape))),
            ("ignore_index is not applied: positions whose target is ignore_index must add nothing to the loss "
             "and get a zero gradient", (nll.mean(), (g_all / N).reshape(shape))),
            ("ignored positions still get a gradient: zero the rows of grad_logits whose target is ignore_index",
             (mean_loss, (g_all / n).reshape(shape))),
        ]
    return out


def _smoothing_variants(logits, targets, reference):
    """(hint, (loss, grad)) of known label-smoothing mistakes, from the reference's (loss, grad_logits). Plain
    cross-entropy's mistakes are not among them: the hard-target gradient equals one of their gradients."""
    want_loss, want_grad = reference
    V = logits.shape[-1]
    z = logits.reshape(-1, V)
    t = np.asarray(targets).reshape(-1)
    N = t.size
    p = np.exp(z - z.max(-1, keepdims=True))
    p /= p.sum(-1, keepdims=True)
    p[np.arange(N), t] -= 1
    return [
        ("grad_logits uses the hard one-hot target, (softmax - one_hot) / N; the loss uses the smoothed one, and "
         "so must its gradient: (softmax - y_smooth) / N with y_smooth = (1 - epsilon) * one_hot + epsilon / V",
         (want_loss, (p / N).reshape(logits.shape))),
        ("the loss is summed over positions instead of averaged: divide by the number of targets",
         (want_loss * N, want_grad)),
        ("grad_logits is not divided by the number of targets (the loss is a mean, so is its gradient)",
         (want_loss, want_grad * N)),
    ]


def _ce_hint(row, variants, loss, grad, cfg):
    """The known mistake among `variants` ((hint, (loss, grad))) that reproduces the wrong output (loss or
    grad_logits) to the comparison's own allowance, by the one known-bug matcher."""
    key = "loss" if row["output"].startswith("loss") else "grad"
    got = float(loss) if key == "loss" else grad
    candidates = []
    for hint, (vl, vg) in variants:
        err = abs(got - vl) if key == "loss" else float(np.abs(got - vg).max())
        candidates.append((hint, err / row["allowed"], row["ratio"]))
    hint = name_cause(candidates)
    if hint:
        return hint
    if key == "loss":
        return factor_pattern(np.float64(row["got"]), np.float64(row["reference"]), cfg, what="your loss")
    return None
