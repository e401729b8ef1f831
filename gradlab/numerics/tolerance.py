"""gradlab's tolerance policy, in one place (README: "How gradlab compares numbers").

Every check that compares two numbers takes its tolerance from this file, by
the kind of comparison and by the coarsest float dtype the student actually
computed in (a module that works in float32 whatever cfg.dtype says is judged
by float32's rounding, never failed for it).

The kinds of comparison:

- FORWARD: the student's values against gradlab's reference computed in float64
  from the very same inputs and weights (`reference`, the known-bug matchers).
  Anchored on torch.testing.assert_close's defaults per dtype (float64 rtol 1e-7
  atol 1e-7; float32 rtol 1.3e-6 atol 1e-5; float16 rtol 1e-3 atol 1e-5), read as
  |got - want| <= atol + rtol * scale with scale the tensor's largest |want|, not
  each element's own |want|: an output entry that cancels to ~0 carries the
  rounding of the larger terms it was summed from (a departure from
  assert_close, which would fail a correct attention output that cancels).
  float64's rtol is IDIOM_GAIN x IDIOM_EPS = 1e-6, not 1e-7: a sound epsilon
  of up to IDIOM_EPS in a division (e / (e.sum() + 1e-7)) moves the outputs by
  up to IDIOM_EPS of their scale per layer; the forward bugs gradlab names are
  1e-5 of the scale or more (LayerNorm's eps outside the square root: ~eps / 2).
- REPEAT: the same code on the same input, twice (`determinism`, the probes of
  `causality` and `batch_independence`, the repeatability precondition): identical
  code gives identical bits; the tolerance only absorbs a BLAS that reorders sums.
- TRAJECTORY: optimizer parameters after several steps, against the reference
  optimizer run in float64 on the same numbers; in float32, plus SAFETY x how far
  the reference's own float32 run is from its float64 run (checks/trajectory.py).
- SCHEDULE and CLIP: scalar formulas of Python floats.
- PROBABILITY_SUM: how far a softmax row may sum from 1. A row normalised by
  (sum + eps) sums to 1 - eps / sum: an eps up to IDIOM_EPS is allowed.
- The gradient check's own numbers are measured, not fixed: the finite-difference
  noise of the student's forward (SAFETY x the measured noise), the analytical
  side's rounding (ANALYTICAL_ROUNDING, ELEMENT_ROUNDING; for a float32 module with
  a float64 copy, measured instead: twin_rounding), and, for sound idioms,
  their measured size: an attention's softmax rows that sum to 1 - eps / sum show its
  eps (division_idiom), and its effect on the gradients is bounded as measured (idiom_allowance);
  a loss's eps inside the log is bounded by eps / p[target] per row, and checked
  sharply along directions a whole-row scale cannot move (checks/gradient.py);
  label smoothing's log touches every class, so its bound sums over the classes
  (smoothing_bounds).

IDIOM_EPS is the largest epsilon a sound numerical idiom adds inside a log or a
division (np.log(p + 1e-10), e / (e.sum() + 1e-9), np.clip(p, 1e-12, 1)):
1e-7. Its effect is bounded where it acts: log(p + eps) - log(p) <= eps / p, so
the cross-entropy comparisons allow IDIOM_EPS / p[target] per row, computed from
the reference's own probabilities (a bound on this input, not a blanket rtol).
"""
from dataclasses import dataclass

import numpy as np

IDIOM_EPS = 1e-7        # the largest epsilon a sound idiom puts inside a log or a division
IDIOM_GAIN = 10         # ... carried through a few layers (a forward comparison's allowance: 10 x IDIOM_EPS)


@dataclass(frozen=True)
class Tol:
    rtol: float          # relative to the compared tensor's largest |reference| entry
    atol: float = 0.0

    def allowed(self, scale):
        """The largest |got - want| allowed for a tensor whose largest |reference| entry is `scale`."""
        return self.atol + self.rtol * scale

    def describe(self):
        return f"rtol {self.rtol:.1e}" + (f", atol {self.atol:.0e}" if self.atol else "")


# ---- the table: comparison -> dtype -> tolerance ---------------------------------------------

TABLE = {
    # torch.testing.assert_close's defaults; float64's rtol raised to IDIOM_GAIN x IDIOM_EPS (see above);
    # float16's to 1e-2: a whole module computed in float16 (not one op) is off by up to 1.7e-3 of its scale
    # (measured: 20 seeds, every module kind, the lm worst), and the bugs named are 1e-1 and more
    "forward": {"float64": Tol(IDIOM_GAIN * IDIOM_EPS, 1e-7), "float32": Tol(1.3e-6, 1e-5),
                "float16": Tol(1e-2, 1e-5)},
    # same code, same input: identical bits; a reordered BLAS sum is a few eps of the largest entry
    "repeat": {"float64": Tol(1e-12), "float32": Tol(1e-6), "float16": Tol(1e-3)},
    # six optimizer steps, each a few roundings of parameters of size ~1 (relative to max(1, |p|))
    "trajectory": {"float64": Tol(1e-10), "float32": Tol(1e-6), "float16": Tol(1e-3)},
    # Python-float formulas: exact up to the order of the operations; a schedule computed in float32 (its
    # values float32 numbers, whatever cfg.dtype says) rounds a few times by float32's 6e-8
    "schedule": {"float64": Tol(1e-9), "float32": Tol(1e-6), "float16": Tol(1e-3)},
    # the "+ 1e-6" in max_norm / (total_norm + 1e-6) only guards against a zero norm: leaving it out
    # changes the result by ~1e-6 / max_norm, not a bug
    "clip": {"float64": Tol(1e-5), "float32": Tol(1e-5), "float16": Tol(1e-3)},
    # |row sum - 1|: rounding, plus a division by (sum + eps) with eps <= IDIOM_EPS and sum >= 1
    "probability_sum": {"float64": Tol(10 * IDIOM_EPS), "float32": Tol(1e-5), "float16": Tol(1e-2)},
    # causal attention weights above the diagonal: exp(-inf) and exp(-1e9 - max) are exactly 0
    "masked_zero": {"float64": Tol(1e-12), "float32": Tol(1e-7), "float16": Tol(1e-4)},
    # embedding gradient rows against np.add.at of the upstream gradient: summation order only
    "exact_sum": {"float64": Tol(1e-10), "float32": Tol(1e-5), "float16": Tol(1e-2)},
    # a row of an embedding gradient against central differences (step STEP below, no extrapolation)
    "finite_difference_row": {"float64": Tol(1e-6), "float32": Tol(2e-2), "float16": Tol(1e-1)},
}

# A float64 copy of a float32 module must reproduce its output to this fraction before the gradient
# check trusts it for the numerical side (a float32 forward is ~1e-7 of its scale; state outside the
# parameters is far more).
TWIN_MATCH = 1e-3
# ...and a float16 module's: its own rounding is ~1e-3 of its intermediates, which may dwarf the output
TWIN_MATCH_FLOAT16 = 1e-1

# The gradient check measures a float32 module's analytical rounding as the difference between its gradients
# and its float64 copy's at the same weights, input and g (twin_rounding): trusted up to the same TWIN_MATCH of
# the tensor's scale.

# checks/backward.py, in eps of the module's coarsest dtype times the largest gradient entry:
BACKWARD_REPEAT_ULPS = 100      # backward twice after one forward: BLAS may reorder sums
BACKWARD_LINEAR_ULPS = 1e4      # backward(a g1 + b g2) against a backward(g1) + b backward(g2): three calls' rounding
BACKWARD_LINEAR_MAX = 0.05      # ...but never more than 5% of the entry (1e4 eps is 10x the entry in float16)

# gradlab.diagnosis.causes: two arrays (analytical against a per-element finite-difference map) fit a
# pattern when they agree to this fraction of their scale: loose enough for float32 and finite-difference
# noise, far tighter than any bug the patterns name.
PATTERN_MATCH = 1e-3

# ---- the gradient check's measured tolerances (gradlab.numerics.engine) -------------------------

SAFETY = 10.0                # tolerance = SAFETY x the measured numerical error
ANALYTICAL_ROUNDING = 8.0    # the analytical side may be off by this x eps x (sum|a_i d_i| + 4 max|a| |d|)
ROUNDING_ONLY = 64.0         # a gradient whose entries are all within this x eps of the module's largest is rounding:
                             # its allowance is relative to the module's largest entry, not its own
ELEMENT_ROUNDING = 64.0      # per element: this x eps(analytical) x the tensor's largest gradient
HALF_ROUNDING = 1.0          # float16 analytical side: this x eps x (||a * d|| + max|a| ||d||), a random walk
                             # (correct modules stay below 0.12 of it over 20 seeds, every module kind)
IDIOM_SPREAD = 32.0          # a softmax's e / (sum + eps) after the max subtraction: its gradients differ from the
                             # usual backward's by up to this x eps / sum x ||a * d|| along a random direction (and x
                             # eps / sum x max|a| per element); measured against the exact gradient, per tensor, over
                             # 180,000 (input, direction) pairs at cfg's default sizes: p99.9 17-21, max 42; over
                             # 30,000 at B=2 T=16 D=64 H=4: max 12 (see idiom_allowance)
# a float64 objective whose measured noise is this fraction of the gradient's size cannot resolve anything
NOISE_CANNOT_JUDGE = 0.1
# Finite differences in float32 (a module computing in float32 inside): the noise of f is measured from one
# fourth difference, which can fall short of what the next evaluation shows. A disagreement within
# FLOAT32_MARGIN tolerances is judged again at a second input, and passes only if that one agrees clearly,
# within FLOAT32_CLEAR of its tolerance. Measured: a correct decoder layer with float32 LayerNorms failed 1 of
# 40 seeds at 1.04x its tolerance, and passes all 40 so; the zoo's gradient bugs checked in float32 fail at 37x
# (one element of an attention weight off) to 10^7x. The price, at float32's resolution for an error spread
# evenly (a residual (c - 1) <a, d> along a random d): a float32 linear whose weight gradient is 1.01x too large
# fails on 20 of 25 seeds, as without a second look; one 1.005x too large on 13 of 25, 3 fewer (with a margin
# of 3 and no clear bar: 5 fewer, and 1.01x passed once more)
FLOAT32_MARGIN = 2.0
FLOAT32_CLEAR = 0.5

# ---- the known-bug matcher (gradlab.diagnosis.matcher) -----------------------------------------
# A known-buggy variant names the cause when it reproduces the student's numbers to the comparison's
# own tolerance, and the correct computation is at least SEPARATION times further from them.
SEPARATION = 10.0

EPS = {name: float(np.finfo(name).eps) for name in ("float64", "float32", "float16")}   # rounding units


FEW_BITS = 16       # computed_eps: results of at most this many significant bits are no sign of float32 arithmetic


_BELOW_FLOAT32 = np.uint64((1 << 29) - 1)    # the float64 mantissa bits a float32 number leaves 0


def _head_is_float32(a, n=8):
    """The first n entries may be float32 numbers: none of them has a bit set below float32's 24-bit mantissa.
    Every float32 number (NaN and inf included) passes; a float64 computation's entries do not, and this cheap
    look spares the whole array's comparison (the gradient check asks it of every tensor it judges)."""
    return not (np.ascontiguousarray(a.flat[:n]).view(np.uint64) & _BELOW_FLOAT32).any()


def computed_eps(arrays, full_mantissas=False):
    """The rounding unit of the precision these float64 results were computed in: float32's when every
    entry of every one is a float32 number (and some are not 0), as from a module that computes in
    float32 inside and casts its results back to float64; otherwise float64's. (Results of a float64
    computation from random inputs are float32 numbers by chance with probability ~2**-29 per entry.)
    full_mantissas: only when some entry has more than FEW_BITS significant bits (a float64 result that is
    ~0 by cancellation, a few bits of 2**-56, is a float32 number and is no sign of float32 arithmetic; the
    float32 residue of the same sum, a few bits of 2**-24, is)."""
    arrays = [a for a in arrays if isinstance(a, np.ndarray) and a.dtype == np.float64 and a.size]
    if not arrays or not all(_head_is_float32(a) for a in arrays) or not any(a.any() for a in arrays):
        return EPS["float64"]
    with np.errstate(over="ignore", invalid="ignore"):
        exact = all(np.array_equal(a, a.astype(np.float32), equal_nan=True) for a in arrays)
        if exact and full_mantissas:
            # float32 arithmetic fills its 24-bit mantissas; a float64 result of few significant bits (what is
            # left of a sum that cancels: a bias gradient that is 0 in theory, 2**-56 x a small integer) is a
            # float32 number too, and says nothing
            exact = any(np.any(np.modf(np.frexp(a[np.isfinite(a)])[0] * 2.0 ** FEW_BITS)[0]) for a in arrays)
    return EPS["float32"] if exact else EPS["float64"]


def computed_dtype(arrays, declared):
    """The dtype float64 results were computed in, for choosing a tolerance row: float32 when they are all
    float32 numbers (computed_eps), else `declared` (cfg's dtype, or float64 for Python floats)."""
    return np.dtype(np.float32) if computed_eps(arrays) > EPS["float64"] else np.dtype(declared)


def eps_of(dtype):
    """The rounding unit of a float dtype (float32's for anything else: ints, objects)."""
    try:
        return _EPS_OF[dtype]        # a dtype's name is slow to read, and checks ask for it often
    except (KeyError, TypeError):
        pass
    eps = EPS.get(np.dtype(dtype).name, EPS["float32"])
    if isinstance(dtype, np.dtype) and len(_EPS_OF) < 64:
        _EPS_OF[dtype] = eps
    return eps


_EPS_OF = {}


def coarsest(*things):
    """The coarsest float dtype name among dtypes / arrays (non-float ones ignored); float64 if none."""
    names = []
    for t in things:
        dt = t.dtype if hasattr(t, "dtype") else np.dtype(t)
        if dt.kind == "f" and dt.name in EPS:
            names.append(dt.name)
    return max(names, key=lambda n: EPS[n], default="float64")


def tolerance(comparison, *things):
    """The Tol for a comparison, by the coarsest float dtype among `things` (dtypes or arrays)."""
    return TABLE[comparison][coarsest(*things)]


def twin_rounding(analytical, twin_analytical, scale):
    """The analytical side's rounding, measured, per element: the student's float32 gradient minus its float64
    copy's gradient at the same weights, input and g (signed: along a direction d the analytical side is off by
    exactly <difference, d>, which the gradient check allows). The copy runs the same code, so the difference is the
    float32 arithmetic, however ill-conditioned the computation is (LayerNorm over 2 close features amplifies
    it by 1 / sigma: 1e-4 of the gradient, not the few eps a formula assumes). The same code means the same
    bugs: a wrong term is in both, and the copy's gradient against the float64 finite differences shows it.
    Trusted when the copy's gradient is float64 (its own rounding is then float64's) and within TWIN_MATCH of
    `scale`, the largest gradient entry of all the tensors compared: rounding is relative to the gradients
    flowing through the backward pass, not to a tensor whose own gradient cancels to almost nothing (an LM's
    positional table under a final LayerNorm over 2 features: 1e-4, known to 1.5% in float32). Beyond it the
    two differ by more than rounding (state kept between calls, a dtype-dependent path): None, and the check
    keeps its eps-based allowance."""
    if getattr(twin_analytical, "dtype", None) != np.float64:
        return None
    a = np.asarray(analytical, dtype=np.float64)
    b = np.asarray(twin_analytical, dtype=np.float64)
    if a.shape != b.shape:
        return None
    with np.errstate(all="ignore"):
        diff = a - b
    if not np.all(np.isfinite(diff)) or float(np.max(np.abs(diff), initial=0.0)) > TWIN_MATCH * scale:
        return None
    return diff


def idiom_row_bound(p_target):
    """Per row: how much a sound epsilon inside log(p + eps) can change the loss of that row
    (absolute), and scale its gradient (relative): log(p + eps) - log(p) <= eps / p."""
    return IDIOM_EPS / np.maximum(np.asarray(p_target, dtype=np.float64), 1e-300)


def loss_row_bounds(logits, targets, ignore=None):
    """(bound per row, counted rows) of a cross-entropy-like loss on `logits` (..., V): for each row,
    idiom_row_bound of the probability softmax gives its target; 0 for rows equal to `ignore`."""
    V = logits.shape[-1]
    z = logits.astype(np.float64).reshape(-1, V)
    t = np.asarray(targets).reshape(-1)
    keep = np.ones(t.shape, bool) if ignore is None else t != ignore
    logp = z - z.max(axis=1, keepdims=True)
    logp -= np.log(np.exp(logp).sum(axis=1, keepdims=True))
    p_target = np.exp(logp[np.arange(t.size), np.where(keep, t, 0)])
    return np.where(keep, idiom_row_bound(p_target), 0.0), keep


def _smoothed_target(logits, targets, epsilon):
    """(p = softmax(logits), q = (1 - epsilon) one_hot + epsilon / V), rows (N, V), in float64."""
    V = logits.shape[-1]
    z = logits.astype(np.float64).reshape(-1, V)
    t = np.asarray(targets).reshape(-1)
    logp = z - z.max(axis=1, keepdims=True)
    logp -= np.log(np.exp(logp).sum(axis=1, keepdims=True))
    q = np.full(z.shape, epsilon / V)
    q[np.arange(t.size), t] += 1.0 - epsilon
    return np.exp(logp), q


def smoothing_bounds(logits, targets, epsilon):
    """(loss bound, grad_logits bound per element) for a sound eps <= IDIOM_EPS inside the log of a
    label-smoothed cross-entropy (article 000's np.log(y_pred + eps), which touches every class), with
    q = (1 - epsilon) one_hot + epsilon / V and p = softmax(logits), N rows:
    - the loss, a mean over rows of -sum_v q_v log(p_v + eps), moves by at most the mean of
      sum_v q_v log(1 + IDIOM_EPS / p_v);
    - its exact gradient differs from the usual (p - q) / N by (q_j s_j - p_j sum_v q_v s_v) / N,
      s_v = eps / (p_v + eps): at most (q_j s_j + p_j sum_v q_v s_v) / N per element, s at IDIOM_EPS.
    A rare class (p_v ~ 1e-3 at V = 11) moves the loss by ~epsilon / V x 1e-4 of itself: far above a blanket
    1e-7, and exactly what np.log(p + 1e-7) does (the cross-entropy bound, eps / p[target], sees only the
    target's class)."""
    p, q = _smoothed_target(logits, targets, epsilon)
    loss = float(np.mean((q * np.log1p(IDIOM_EPS / np.maximum(p, 1e-300))).sum(axis=1)))
    s = IDIOM_EPS / (p + IDIOM_EPS)
    grad = (q * s + p * (q * s).sum(axis=1, keepdims=True)) / p.shape[0]
    return loss, grad.reshape(logits.shape)


def smoothing_first_order(logits, targets, epsilon):
    """(w, rest), both shaped like logits: the gradient error of smoothing_bounds is eps x w + r with
    w = (q / p - p sum_v q_v / p_v) / N, the same eps in every row, and |r| <= rest =
    (q (E / p)^2 + p sum_v q_v (E / p_v)^2) / N at E = IDIOM_EPS (s_v - eps / p_v = -eps^2 / (p_v (p_v + eps))).
    Along a direction whose every row is orthogonal to w's, only `rest` is left: the gradient check stays
    sharp there, as it does for cross_entropy along directions a whole-row scale cannot move."""
    p, q = _smoothed_target(logits, targets, epsilon)
    tiny = np.maximum(p, 1e-300)
    w = (q / tiny - p * (q / tiny).sum(axis=1, keepdims=True)) / p.shape[0]
    r2 = q * (IDIOM_EPS / tiny) ** 2
    rest = (r2 + p * r2.sum(axis=1, keepdims=True)) / p.shape[0]
    return w.reshape(logits.shape), rest.reshape(logits.shape)


def idiom_allowance(products, relative):
    """The directional gradient check's allowance for a softmax normalised by (sum + eps) after
    subtracting the row's max, whose rows fall `relative` (eps / sum, at most IDIOM_EPS) short of 1.
    With eps the softmax is no longer shift-invariant, so the max subtraction adds a term to the true
    gradient that the usual backward (A * (dA - sum(A * dA))) leaves out: -(eps / sum) x sum(A * dA)
    at each row's largest score. It is not a relative error of each element: it follows dA, and a
    near one-hot row, whose own score gradients are ~0, carries all of it. Measured against the exact
    gradient, it is up to IDIOM_SPREAD x relative x ||a * d|| along a random direction.
    `products`: the arrays a_i * d_i."""
    relative = min(max(float(relative), 0.0), IDIOM_EPS)
    if relative == 0.0:
        return 0.0
    return IDIOM_SPREAD * relative * float(np.sqrt(sum(float(np.sum(p * p)) for p in products)))


def kept_attention(module, depth=4):
    """Every `attn_weights` array a module keeps, on itself or on its parts (attributes, lists, tuples
    and dicts of objects, `depth` levels down): a block or an LM keeps its attentions' weights there."""
    found, seen, level = [], set(), [module]
    for _ in range(depth + 1):
        nxt = []
        for obj in level:
            if id(obj) in seen or isinstance(obj, (np.ndarray, str, bytes, int, float, type)):
                continue
            seen.add(id(obj))
            if isinstance(obj, (list, tuple)):
                nxt.extend(obj)
                continue
            if isinstance(obj, dict):
                nxt.extend(obj.values())
                continue
            try:
                attrs = object.__getattribute__(obj, "__dict__")     # no property of the student's code runs
            except (AttributeError, TypeError):
                continue
            if not isinstance(attrs, dict):
                continue
            weights = attrs.get("attn_weights")
            if isinstance(weights, np.ndarray):
                found.append(weights)
            nxt.extend(v for k, v in attrs.items() if k != "attn_weights")
        level = nxt
    return found


def division_idiom(attn_weights):
    """How far the softmax rows a module kept fall short of 1, when by no more than a sound
    e / (e.sum() + eps) with eps <= IDIOM_EPS makes them (1 - eps / sum): eps / sum, which
    idiom_allowance scales into the gradient check's allowance. 0 when nothing is kept,
    0 when the shortfall is larger (a bug, softmax_rows' finding: no allowance for it), and 0 when
    it is within the rounding of a row's sum (n eps of the weights' dtype for rows of n: an exact
    softmax's rows sum to 1 +- a few eps, and the analytical side's rounding allowance covers that)."""
    if not isinstance(attn_weights, np.ndarray) or attn_weights.dtype.kind != "f" or attn_weights.ndim < 1:
        return 0.0
    with np.errstate(all="ignore"):
        short = float(np.max(np.abs(1.0 - attn_weights.astype(np.float64).sum(axis=-1)), initial=0.0))
    rounding = attn_weights.shape[-1] * eps_of(attn_weights.dtype)
    return short if rounding < short <= IDIOM_EPS else 0.0
