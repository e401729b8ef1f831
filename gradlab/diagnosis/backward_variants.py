"""Known-buggy backward passes, to name the cause of a failed `gradient` check.

When the student's analytical gradients disagree with finite differences, the
check asks: does some known-buggy backward reproduce them? gradlab's reference
module (float64) gets the student's weights (matched by name, shape or
param_map, a param_map function included: see _positions), runs forward on the same input,
and then backward with the same upstream gradient g, once correctly and once
per variant below. A variant is named only when it reproduces every tensor the
student returned (the input gradient and every parameter gradient) to the
forward comparison's tolerance for the student's dtype, while the correct
backward does not (gradlab.diagnosis.matcher, the one known-bug matcher): then
the student's numbers are what that mistake produces. Otherwise nothing is
said. This runs only after a failure.

The approach is the one checks/reference.py takes for a wrong forward (run
known buggy variants on the student's weights, report the one that reproduces
the student's output), applied to backward.

VARIANTS: {kind name: [(hint, fn(ref, g) -> dx)]}. fn runs after ref.forward(x)
and leaves the parameter gradients in ref's grads dicts, like ref.backward(g).
The hint completes "your gradients match a backward that ...".

Not covered, on purpose:
- attention, mask not applied in backward: the masked weights are exactly 0
  (-inf or -1e9 before the softmax), so A * (...) is 0 there either way; no
  backward built on A can differ.
- layernorm: its backward bugs (mean term, variance term, eps) are named by the
  patterns in gradlab.diagnosis.causes already.
- lm: its usual backward bugs (lookup path without np.add.at, the tied output
  path missing) are named by gradlab.diagnosis.causes.

Layers made of layers (block, lm, encoder_layer, decoder_layer, seq2seq) get the
mistakes of their parts: every LayerNorm inside without its mean or variance term
or gamma (a student writes LayerNorm once and uses it everywhere), every causal
self-attention inside without the softmax Jacobian's term or dK's transpose. The
reference's own backward runs with those parts swapped for one call (_swapped,
_attention_inside), so the wiring is always the reference's. A module whose
parameters cannot all be put into the reference (extra biases the reference
lacks) gets no variant, as for any kind.
"""
import math
import types

import numpy as np

from gradlab.execution.discovery import find_slots
from gradlab.contract.errors import CheckFailure, CheckSkipped, StudentError
from gradlab.diagnosis.matcher import name_cause
from gradlab.execution.weights import load_reference, named_params, reference_module, resolve_names
from gradlab.numerics.tolerance import TABLE, eps_of


def match_tolerance(eps_analytical):
    """The Tol a backward must reproduce each of the student's tensors to: the forward comparison's,
    for the precision the student's gradients carry."""
    dtype = next((d for d in ("float64", "float32", "float16") if eps_analytical <= eps_of(d)), "float16")
    return TABLE["forward"][dtype]


# ---- attention: the reference backward, with switches -----------------------------

def _attention_backward(ref, g, jacobian=True, scale_power=1, dk_transposed=True, dv_transposed=True):
    """CausalSelfAttention.backward (modules/attention.py) with one mistake switched on.
    jacobian=False: dscores = A * dA (no - sum(dA * A)); scale_power: dscores is
    multiplied by (1/sqrt(d_k)) ** scale_power (0: no scale, 2: scaled twice); dk_transposed=False:
    dK = dscores @ q; dv_transposed=False: dV = A @ dctx."""
    p = ref.params
    D = g.shape[-1]
    A, q, k, v = ref.attn_weights, ref.q, ref.k, ref.v
    ref.grads["out_weight"] = ref.ctx.reshape(-1, D).T @ g.reshape(-1, D)
    ref.grads["out_bias"] = g.reshape(-1, D).sum(axis=0)
    dctx = ref._split_heads(g @ p["out_weight"].T)
    dA = dctx @ v.transpose(0, 1, 3, 2)
    dv = (A.transpose(0, 1, 3, 2) if dv_transposed else A) @ dctx
    dscores = A * (dA - (dA * A).sum(axis=-1, keepdims=True)) if jacobian else A * dA
    dscores = dscores * ref.scale ** scale_power
    dq = dscores @ k
    dk = (dscores.transpose(0, 1, 3, 2) if dk_transposed else dscores) @ q
    dqkv = np.concatenate([ref._merge_heads(a) for a in (dq, dk, dv)], axis=-1)
    ref.grads["qkv_weight"] = ref.x.reshape(-1, D).T @ dqkv.reshape(-1, 3 * D)
    ref.grads["qkv_bias"] = dqkv.reshape(-1, 3 * D).sum(axis=0)
    return dqkv @ p["qkv_weight"].T


def _attn(**switches):
    return lambda ref, g: _attention_backward(ref, g, **switches)


ABSENT = object()     # a variant's run(ref, g) for a module without the layer it changes (None is lm's dx)


# ---- linear: the input gradient through the weight the wrong way round ---------------

def _linear_dx_transposed(ref, g):
    """Linear.backward (modules/linear.py), but dx = grad_out @ weight: only a square weight makes it fit."""
    ref.backward(g)
    weight = ref.params["weight"]
    return g @ weight if weight.shape[0] == weight.shape[1] else ABSENT


# ---- ffn: the reference backward with another activation derivative ---------------

_C = math.sqrt(2 / math.pi)
_erf = np.vectorize(math.erf, otypes=[np.float64])


def _gelu_tanh(h):
    return 0.5 * h * (1 + np.tanh(_C * (h + 0.044715 * h ** 3)))


def _gelu_tanh_grad(h):
    t = np.tanh(_C * (h + 0.044715 * h ** 3))
    return 0.5 * (1 + t) + 0.5 * h * (1 - t * t) * _C * (1 + 3 * 0.044715 * h * h)


def _ffn_backward(ref, g, derivative):
    """FeedForward.backward (modules/ffn.py) with dh = da * derivative(ref)."""
    p = ref.params
    D, F = p["w1"].shape
    g2 = g.reshape(-1, D)
    ref.grads["w2"] = ref.a.reshape(-1, F).T @ g2
    ref.grads["b2"] = g2.sum(axis=0)
    dh = (g @ p["w2"].T) * derivative(ref)
    dh2 = dh.reshape(-1, F)
    ref.grads["w1"] = ref.x.reshape(-1, D).T @ dh2
    ref.grads["b1"] = dh2.sum(axis=0)
    return dh @ p["w1"].T


def _ffn(derivative, activation="gelu"):
    """A variant for modules whose forward uses `activation` (the others skip it)."""
    def run(ref, g):
        if ref.activation != activation:
            return None
        return _ffn_backward(ref, g, derivative)
    return run


def _erf_gelu_grad(ref):                     # d/dh of the exact h * Phi(h)
    h = ref.h
    return 0.5 * (1 + _erf(h / math.sqrt(2))) + h * np.exp(-0.5 * h * h) / math.sqrt(2 * math.pi)


def _second_term_doubled(ref):               # 0.5 (1 + t) + h (1 - t^2) ...: the second term without its 0.5
    return 2 * _gelu_tanh_grad(ref.h) - _tanh_held_constant(ref)


def _tanh_held_constant(ref):                # d/dh of 0.5 h (1 + t) with t = tanh(...) treated as a constant
    return 0.5 * (1 + np.tanh(_C * (ref.h + 0.044715 * ref.h ** 3)))


# ---- block: the reference children, wired back without a residual -------------------

def _block(attn_skip=True, ffn_skip=True, attn_gets=None):
    """TransformerBlock.backward (modules/block.py) without the skip path of a residual
    (attn_skip / ffn_skip False), or with the attention branch fed the block's upstream
    gradient g instead of the gradient at h (attn_gets="g")."""
    def run(ref, g):
        dh = ref.ln2.backward(ref.ffn.backward(g)) + (g if ffn_skip else 0)
        through_attn = ref.ln1.backward(ref.attn.backward(g if attn_gets == "g" else dh))
        return through_attn + (dh if attn_skip else 0)
    return run


def _decoder(self_skip=True, cross_skip=True, ffn_skip=True):
    """DecoderLayer.backward (modules/decoder_layer.py, Post-LN) without the skip path of one residual: the
    gradient at a sum x + branch(x) is the branch's backward plus the gradient itself."""
    def run(ref, g):
        ds3 = ref.ln3.backward(g)
        dh2 = ref.ffn.backward(ds3) + (ds3 if ffn_skip else 0)
        ds2 = ref.ln2.backward(dh2)
        dq_side, dmemory = ref.cross_attn.backward(ds2)
        ds1 = ref.ln1.backward(dq_side + (ds2 if cross_skip else 0))
        return ref.self_attn.backward(ds1) + (ds1 if self_skip else 0), dmemory
    return run


_DECODER_RESIDUALS = [
    ("leaves out the residual (skip) path of the self-attention sub-layer: for h1 = LN1(x + self_attn(x)), "
     "dL/dx = ds1 + self_attn.backward(ds1) with ds1 = ln1.backward(dh1)", _decoder(self_skip=False)),
    ("leaves out the residual (skip) path of the cross-attention sub-layer: for h2 = LN2(h1 + cross_attn(h1, "
     "memory)), dh1 = ds2 + the cross-attention's dx, ds2 = ln2.backward(dh2)", _decoder(cross_skip=False)),
    ("leaves out the residual (skip) path of the FFN sub-layer: for out = LN3(h2 + ffn(h2)), "
     "dh2 = ds3 + ffn.backward(ds3), ds3 = ln3.backward(grad_out)", _decoder(ffn_skip=False)),
]


# ---- layers made of layers: every LayerNorm (or attention) inside with one mistake ---------

def _layernorm_backward(mean_term=True, var_term=True, gamma=True):
    """layernorm_backward (modules/layernorm.py) with one mistake switched on: the mean term
    (- mean(dxhat)) or the variance term (- xhat * mean(dxhat * xhat)) left out, or dxhat = grad_out
    without gamma."""
    def backward(grad_out, cache, gamma_):
        xhat, inv_std = cache
        D = grad_out.shape[-1]
        dgamma = (grad_out * xhat).reshape(-1, D).sum(axis=0)
        dbeta = grad_out.reshape(-1, D).sum(axis=0)
        dxhat = grad_out * gamma_ if gamma else grad_out
        dx = dxhat
        if mean_term:
            dx = dx - dxhat.mean(axis=-1, keepdims=True)
        if var_term:
            dx = dx - xhat * (dxhat * xhat).mean(axis=-1, keepdims=True)
        return inv_std * dx, dgamma, dbeta
    return backward


def _layers(obj, depth=0):
    """obj and every reference layer inside it (attributes, and lists of layers), depth first."""
    yield obj
    if depth > 6:
        return
    for value in vars(obj).values():
        for item in value if isinstance(value, (list, tuple)) else (value,):
            if type(item).__module__.startswith("gradlab.modules.") and hasattr(item, "backward"):
                yield from _layers(item, depth + 1)


def _inside(replace):
    """A variant of a layer made of layers: ref.backward(g) with the backward of each layer inside it that
    replace(layer) gives one for (None: left alone) swapped for that one, for this call only (an attribute
    of the layer's own, removed after it: the reference's classes, and other modules, are untouched).
    ABSENT (the variant does not apply) when no layer gets one."""
    def run(ref, g):
        patched = [(layer, fn) for layer in _layers(ref) for fn in [replace(layer)] if fn is not None]
        if not patched:
            return ABSENT
        for layer, fn in patched:
            layer.backward = fn
        try:
            return ref.backward(g)
        finally:
            for layer, _ in patched:
                del layer.backward
    return run


def _swapped(**switches):
    """Every layernorm_backward the layers call (the reference's own helper, looked up by name in their
    backward) is `_layernorm_backward(**switches)`: the layer runs a copy of its class's backward with
    that one name bound otherwise."""
    replacement = _layernorm_backward(**switches)

    def replace(layer):
        fn = getattr(type(layer), "backward", None)
        code = getattr(fn, "__code__", None)
        if code is None or "layernorm_backward" not in code.co_names:
            return None
        copy = types.FunctionType(code, {**fn.__globals__, "layernorm_backward": replacement},
                                  fn.__name__, fn.__defaults__, fn.__closure__)
        return types.MethodType(copy, layer)
    return _inside(replace)


def _attention_inside(**switches):
    """Every causal self-attention inside runs _attention_backward with `switches`."""
    def replace(layer):
        from gradlab.modules.attention import CausalSelfAttention   # (at diagnosis time, in gradlab's process)
        if not isinstance(layer, CausalSelfAttention):
            return None
        return lambda grad: _attention_backward(layer, grad, **switches)
    return _inside(replace)


_LAYERNORM_VARIANTS = [
    ("leaves out the variance term of LayerNorm's backward (in every LayerNorm of the layer): "
     "dx = (dxhat - mean(dxhat) - xhat * mean(dxhat * xhat)) / sqrt(var + eps) with dxhat = grad_out * gamma; "
     "the variance depends on every x in the row, hence the last term", _swapped(var_term=False)),
    ("leaves out the mean term of LayerNorm's backward (in every LayerNorm of the layer): "
     "dx = (dxhat - mean(dxhat) - xhat * mean(dxhat * xhat)) / sqrt(var + eps) with dxhat = grad_out * gamma; "
     "the mean depends on every x in the row, hence - mean(dxhat)", _swapped(mean_term=False)),
    ("treats LayerNorm's mean and variance as constants (in every LayerNorm of the layer): dx = dxhat / sqrt(var "
     "+ eps) leaves out both - mean(dxhat) and - xhat * mean(dxhat * xhat), with dxhat = grad_out * gamma",
     _swapped(mean_term=False, var_term=False)),
    ("leaves gamma out of LayerNorm's backward (in every LayerNorm of the layer): dxhat = grad_out * gamma, "
     "then dx = (dxhat - mean(dxhat) - xhat * mean(dxhat * xhat)) / sqrt(var + eps)", _swapped(gamma=False)),
]

_ATTENTION_INSIDE_VARIANTS = [
    ("leaves out the `- sum(dA * A)` term of the softmax Jacobian in the attention's backward: "
     "dscores = A * (dA - sum(dA * A, axis=-1)), not A * dA (every weight in a row depends on every score "
     "in that row through the normalisation)", _attention_inside(jacobian=False)),
    ("computes the attention's dK as dscores @ q without the transpose (square T x T scores make the shapes "
     "fit either way): scores = q @ k^T, so dK = dscores^T @ q", _attention_inside(dk_transposed=False)),
]


VARIANTS = {
    "linear": [
        ("computes the input gradient with the weight the wrong way round (a square weight makes the shapes fit "
         "either way): for out = x @ W, dx = grad_out @ W^T; in PyTorch's layout, out = x @ weight.T, "
         "dx = grad_out @ weight", _linear_dx_transposed),
    ],
    "attention": [
        ("leaves out the `- sum(dA * A)` term of the softmax Jacobian: the softmax backward is "
         "dscores = A * (dA - sum(dA * A, axis=-1)), not A * dA (every weight in a row depends on every score "
         "in that row through the normalisation)", _attn(jacobian=False)),
        ("leaves out both the `- sum(dA * A)` term of the softmax Jacobian and the 1/sqrt(d_k) scale: "
         "dscores = A * (dA - sum(dA * A, axis=-1)) / sqrt(d_k), not A * dA", _attn(jacobian=False, scale_power=0)),
        ("leaves out the 1/sqrt(d_k) scale: forward multiplies the scores by 1/sqrt(d_k), so backward must "
         "multiply dscores by it too", _attn(scale_power=0)),
        ("applies the 1/sqrt(d_k) scale twice (or scales dscores by 1/d_k): dscores is multiplied by 1/sqrt(d_k) "
         "once, as the scores are in forward",
         _attn(scale_power=2)),
        ("computes dK as dscores @ q without the transpose (square T x T scores make the shapes fit either way): "
         "scores = q @ k^T, so dK = dscores^T @ q (swap the two time axes of dscores)", _attn(dk_transposed=False)),
        ("computes dV as A @ dctx without the transpose (square T x T weights make the shapes fit either way): "
         "ctx = A @ v, so dV = A^T @ dctx (swap the two time axes of A)", _attn(dv_transposed=False)),
    ],
    "ffn": [
        ("uses the derivative of the exact GELU, Phi(h) + h * phi(h), while forward computes the tanh "
         "approximation: differentiate the function forward computes, "
         "0.5 (1 + t) + 0.5 h (1 - t^2) sqrt(2/pi) (1 + 3 * 0.044715 h^2) with t = tanh(sqrt(2/pi) (h + 0.044715 h^3))",
         _ffn(_erf_gelu_grad)),
        ("uses the ReLU derivative (h > 0) while forward computes GELU: use GELU's derivative "
         "0.5 (1 + t) + 0.5 h (1 - t^2) sqrt(2/pi) (1 + 3 * 0.044715 h^2)", _ffn(lambda ref: ref.h > 0)),
        ("evaluates the GELU derivative at the activation's output a = gelu(h) instead of at its input h: "
         "keep the pre-activation h = x @ w1 + b1 from forward and evaluate the derivative there",
         _ffn(lambda ref: _gelu_tanh_grad(ref.a))),
        ("treats t = tanh(...) in 0.5 h (1 + t) as a constant: the derivative is 0.5 (1 + t) plus "
         "0.5 h (1 - t^2) sqrt(2/pi) (1 + 3 * 0.044715 h^2) (t depends on h too)", _ffn(_tanh_held_constant)),
        ("drops the 0.5 of GELU's second term: the derivative of 0.5 h (1 + t) is 0.5 (1 + t) + "
         "0.5 h (1 - t^2) sqrt(2/pi) (1 + 3 * 0.044715 h^2), the product rule applied to the whole 0.5 h (1 + t)",
         _ffn(_second_term_doubled)),
        ("drops the leading 0.5 of GELU's derivative (2x the derivative: w1, b1 and x are 2x the right ones, "
         "w2 and b2 right): the derivative of 0.5 h (1 + t) is 0.5 (1 + t) + 0.5 h (1 - t^2) sqrt(2/pi) "
         "(1 + 3 * 0.044715 h^2)", _ffn(lambda ref: 2 * _gelu_tanh_grad(ref.h))),
        ("uses GELU's derivative while forward computes ReLU (cfg.activation is 'relu'): the ReLU derivative "
         "is (h > 0)", _ffn(lambda ref: _gelu_tanh_grad(ref.h), activation="relu")),
    ],
    "block": [
        ("leaves out the residual (skip) path of the attention sub-layer: for h = x + attn(ln1(x)), "
         "dL/dx = dh + ln1.backward(attn.backward(dh))", _block(attn_skip=False)),
        ("leaves out the residual (skip) path of the FFN sub-layer: for out = h + ffn(ln2(h)), "
         "dh = grad_out + ln2.backward(ffn.backward(grad_out))", _block(ffn_skip=False)),
        ("leaves out the residual (skip) paths of both sub-layers: each residual adds the gradient that skips "
         "the branch, dh = grad_out + ln2.backward(ffn.backward(grad_out)), then "
         "dL/dx = dh + ln1.backward(attn.backward(dh))", _block(attn_skip=False, ffn_skip=False)),
        ("feeds the attention branch the block's upstream gradient grad_out instead of dh, the gradient at "
         "h = x + attn(ln1(x)) (which includes the FFN's contribution): dL/dx = dh + ln1.backward(attn.backward(dh))",
         _block(attn_gets="g")),
    ] + _LAYERNORM_VARIANTS + _ATTENTION_INSIDE_VARIANTS,
    "lm": _LAYERNORM_VARIANTS + _ATTENTION_INSIDE_VARIANTS,
    "encoder_layer": _LAYERNORM_VARIANTS,
    "decoder_layer": _DECODER_RESIDUALS + _LAYERNORM_VARIANTS + _ATTENTION_INSIDE_VARIANTS,
    "seq2seq": _LAYERNORM_VARIANTS + _ATTENTION_INSIDE_VARIANTS,
}


def explain(subject, tensors, context, eps_analytical):
    """A sentence naming the known-buggy backward that reproduces the student's
    gradients, or None.

    tensors: the gradient check's Tensors (name, the array at the point the
    gradients were taken, analytical: the student's gradient as float64), the
    input first as "x" for kinds with an input gradient. context: {"cfg", "x":
    forward's input, "g": the upstream gradient backward was given}.
    eps_analytical: the precision the student's gradients carry."""
    compared = compare(subject, tensors, context, stop_below=1.0, tol=match_tolerance(eps_analytical))
    if compared is None:
        return None
    right, found = compared
    hint = name_cause([(h, err, right) for err, h in found])   # None when the correct backward reproduces them
    if hint is None:
        return None
    n = len(tensors)
    return f"the gradients ({'all ' if n > 1 else ''}{n} tensor{'s' if n > 1 else ''}) match a backward that {hint}"


def compare(subject, tensors, context, stop_below=None, tol=None):
    """(error of the correct backward, [(error, hint) per variant]), each error the
    worst per-tensor max |student - backward| in multiples of what `tol` (a Tol; by
    default the forward comparison's for float64) allows for that tensor's scale; None
    when the kind has no variants or the student's weights cannot be put into the
    reference. The variants are skipped (empty list) when the correct backward's
    error is at most stop_below (a number)."""
    tol = tol or TABLE["forward"]["float64"]
    kind, cfg = subject.kind, subject.cfg
    variants = VARIANTS.get(kind.name)
    if not variants or context.get("g") is None:
        return None
    inputs = [spec.name for spec in kind.grad_inputs()]      # the tensors that are input gradients
    params = [t for t in tensors if t.name not in inputs]
    ref = reference_module(kind, cfg.replace(dtype="float64"))
    ref_params = named_params(ref)
    names = list(ref_params)
    starts = np.cumsum([0] + [ref_params[n].size for n in names])
    index = _positions(subject, params, ref_params, names, starts)
    if index is None:
        return None
    flat = np.concatenate([ref_params[n].reshape(-1) for n in names])
    for t in params:
        flat[index[t.name]] = t.array
    for n, a, b in zip(names, starts[:-1], starts[1:]):
        ref_params[n][...] = flat[a:b].reshape(ref_params[n].shape)
    args = tuple(a.astype(np.float64) if isinstance(a, np.ndarray) and a.dtype.kind == "f" else a
                 for a in context.get("inputs", (context["x"],)))
    g = np.asarray(context["g"], dtype=np.float64)
    grad_of = {slot.name: slot for slot in find_slots(ref)}

    def error(run):
        out = run(ref, g)
        if out is ABSENT or (out is None and inputs):
            return None
        out = out if len(inputs) > 1 else (out,)
        if len(out) != len(inputs) and inputs:
            return None
        dxs = dict(zip(inputs, out))
        grads = np.concatenate([np.asarray(grad_of[n].grad(), dtype=np.float64).reshape(-1) for n in names])
        worst = 0.0
        for t in tensors:
            want = dxs[t.name] if t.name in dxs else grads[index[t.name]]
            want = np.asarray(want, dtype=np.float64)
            if want.shape != t.analytical.shape:
                return None
            scale = max(float(np.abs(want).max(initial=0.0)), float(np.abs(t.analytical).max(initial=0.0)))
            worst = max(worst, float(np.abs(want - t.analytical).max(initial=0.0)) / max(tol.allowed(scale), 1e-300))
        return worst

    try:
        with np.errstate(all="ignore"):
            ref.forward(*args)
            right = error(lambda r, gg: r.backward(gg))
            if right is None:
                return None
            if stop_below is not None and right <= stop_below:
                return right, []
            return right, [(err, hint) for hint, run in variants for err in [error(run)] if err is not None]
    except (ValueError, IndexError, FloatingPointError, StudentError):
        return None


def _positions(subject, params, ref_params, names, starts):
    """{student parameter name: int array of its shape}: the position of each of its
    entries in the reference parameters laid end to end (in `names` order), or None
    when the student's weights cannot all be put into the reference.

    Names matched by name, shape or a param_map dict map whole arrays. A param_map
    function (reference -> student only, e.g. splitting qkv_weight into W_q, W_k,
    W_v) is run once on a fresh module with every reference entry set to its own
    number 1, 2, ...: the number each student entry receives says where it came from."""
    param_map = subject.registration.param_map
    if not (callable(param_map) and not isinstance(param_map, dict)):
        try:
            mapping = resolve_names(subject.kind.name, {t.name: t.array.shape for t in params},
                                    {n: v.shape for n, v in ref_params.items()}, param_map)
        except (CheckSkipped, CheckFailure):
            return None
        if any(ref_params[mapping[t.name]].shape != t.array.shape for t in params):
            return None
        at = dict(zip(names, starts))
        return {t.name: at[mapping[t.name]] + np.arange(t.array.size).reshape(t.array.shape) for t in params}
    if starts[-1] >= 2 ** 24:           # numbers beyond float32's exact integers
        return None
    numbered = {n: np.arange(a + 1, b + 1, dtype=np.float64).reshape(ref_params[n].shape)
                for n, a, b in zip(names, starts[:-1], starts[1:])}
    try:
        module, slots = subject.fresh(np.random.default_rng(0), randomize=False)
        load_reference(subject, module, slots, numbered)
    except (StudentError, CheckSkipped, CheckFailure):
        return None
    by_name = {sl.name: sl.value for sl in slots}
    out, seen = {}, np.zeros(int(starts[-1]), bool)
    for t in params:
        got = by_name.get(t.name)
        if got is None or got.shape != t.array.shape:
            return None
        ids = np.asarray(got, dtype=np.float64)
        if not np.all((ids == np.round(ids)) & (ids >= 1) & (ids <= starts[-1])):
            return None                 # an entry that is not a copy of one reference entry
        out[t.name] = ids.astype(np.int64) - 1
        seen[out[t.name]] = True
    return out if seen.all() else None
