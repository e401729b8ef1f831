"""`trajectory`: optimizers, gradient clipping and the learning-rate schedule
compared with gradlab's reference (PyTorch's semantics) over several steps.

One step of a wrong Adam can look right: counting t per parameter is only
wrong from the second parameter on, a missing bias correction only shows as
the steps go by, eps inside the square root only where gradients are tiny.
So: several parameters of different shapes, gradients spanning five orders of
magnitude, several steps. When the student's numbers are off, known buggy
variants are run on the same numbers, and one that reproduces them names
the cause.
"""
import math

import numpy as np

from gradlab.contract.config import OTHER_DECAY
from gradlab.contract.errors import CheckFailure, StudentError
from gradlab.contract.kinds import TRAJECTORY
from gradlab.contract.numbers import distinct
from gradlab.diagnosis.matcher import name_cause
from gradlab.execution.loader import reference as reference_impl
from gradlab.contract.records import curve, table
from gradlab.execution.calls import Scheduler
from gradlab.execution.subject import call_scalar
from gradlab.contract.suite import Outcome, check
from gradlab.numerics.tolerance import EPS, SAFETY, computed_dtype, computed_eps, tolerance

STEPS = 6
# Per parameter: |student - reference| <= rtol * max(1, largest |reference| entry), rtol from the
# "trajectory" row of gradlab.numerics.tolerance; clipping and the schedule from theirs.
# Every optimizer runs with and without weight decay: the cfg's value, and OTHER_DECAY (or 0 when
# the cfg's is not 0), so a decay applied the wrong way is seen whatever the kind's default.
# ... and in that second run every other hyperparameter the reference optimizer reads is moved off the
# cfg's value too, each to its own value: one hard-coded (betas=(0.9, 0.999)), or read from the wrong field
# (SGD's momentum from beta1: both 0.9 by default), would pass a run at the defaults.
OTHER_VALUES = {"lr": lambda v: v * 2 if v * 2 <= 1 else v / 2, "momentum": lambda v: 0.5 if v != 0.5 else 0.7,
                "beta1": lambda v: 0.8 if v != 0.8 else 0.85, "beta2": lambda v: 0.99 if v != 0.99 else 0.995,
                # large enough to show in float32 (the update moves by ~10%): a hard-coded 1e-8 cannot hide
                "eps": lambda v: 0.1 if v != 0.1 else 0.01}
# Parameters in this order on purpose: a momentum buffer shared between
# parameters broadcasts (3,) into (4, 3) without an error on the first step,
# so the wrong numbers are seen before any shape error.
SHAPES = {"bias": (3,), "w1": (4, 3), "w2": (4, 3)}


# order 6: before input_mutation and determinism, whose few steps on parameters of other shapes can only
# say "it crashed" or "it differs"; this check names the step, the parameter and the cause.
@check("trajectory", needs={TRAJECTORY}, order=6,
       summary="optimizer / clipping / schedule values match the reference (PyTorch semantics) over several steps")
def trajectory(subject, rng):
    kind = subject.kind
    if kind.form == "optimizer":
        return _optimizer(subject, rng)
    if kind.form == "scheduler":
        return _scheduler(subject)
    # The one place a check looks at a kind's name: these two function kinds
    # share the TRAJECTORY tag but not a calling convention.
    if kind.name == "schedule":
        return _schedule(subject)
    return _clip(subject, rng)


# ---- optimizers -------------------------------------------------------------------

def _problem(cfg, rng):
    dtype = cfg.np_dtype
    params = {n: rng.standard_normal(s).astype(dtype) for n, s in SHAPES.items()}
    # magnitudes from 1e-5 to 1: eps inside the sqrt only shows where v_hat is ~ eps
    grads = [{n: (rng.standard_normal(s) * 10.0 ** rng.uniform(-5, 0, size=s)).astype(dtype)
              for n, s in SHAPES.items()} for _ in range(STEPS)]
    return params, grads


def run_optimizer(optimizer, params0, grads_seq, step=None, dtype=np.float64):
    """Params after each step: [{name: array}], and the exception that stopped it (or None)."""
    params = {n: np.array(p, dtype=dtype) for n, p in params0.items()}
    out = []
    for grads in grads_seq:
        try:
            (step or (lambda o, p, g: o.step(p, g)))(optimizer, params, {n: np.array(g, dtype=dtype)
                                                                      for n, g in grads.items()})
        except Exception as e:      # a buggy variant may break on shapes, as the student's code would
            return out, e
        out.append({n: p.copy() for n, p in params.items()})
    return out, None


def _optimizer(subject, rng):
    """The same steps with the cfg's weight_decay and with the other setting (0 or OTHER_DECAY, and the
    other hyperparameters the reference reads moved: _other_setting)."""
    cfg = subject.cfg
    params0, grads_seq = _problem(cfg, rng)
    changes, shown = _other_setting(subject.kind, cfg, params0, grads_seq)
    second = subject.with_cfg(cfg.replace(**changes))
    outcomes = [_optimizer_run(subject, params0, grads_seq)]
    try:
        outcomes.append(_optimizer_run(second, params0, grads_seq, shown=shown, second=True))
    except CheckFailure:
        _same_again(subject, params0, grads_seq)
        raise
    _interleaved(subject, params0, grads_seq)
    views = [v for o in outcomes for v in o.details["views"]]
    metrics = {**outcomes[0].metrics, "max_error": max(o.metrics["max_error"] for o in outcomes)}
    return Outcome(" and ".join(o.message for o in outcomes) + "; two optimizers stepped in turn move their "
                   "parameters as one alone does", metrics, {"views": views})


def _interleaved(subject, params0, grads_seq):
    """Two optimizers built the same way and stepped in turn (the first's step k, then the second's), each on
    parameters of its own, as two models trained side by side: each must move them as one optimizer alone
    does. Sequential runs cannot see a step count or moments kept outside the instance and reset by each
    __init__ (a module-level counter): stepped in turn, the two count each other's steps."""
    kind, cfg = subject.kind, subject.cfg
    tol = tolerance("trajectory", cfg.np_dtype).rtol

    def fresh():
        return {n: p.copy() for n, p in params0.items()}

    alone, params = subject.build(), fresh()
    lone = []
    for grads in grads_seq:
        subject.step(alone, params, {n: g.copy() for n, g in grads.items()})
        lone.append({n: p.astype(np.float64) for n, p in params.items()})
    pair = [(subject.build(), fresh()), (subject.build(), fresh())]
    for k, grads in enumerate(grads_seq):
        for optimizer, params in pair:
            subject.step(optimizer, params, {n: g.copy() for n, g in grads.items()})
        for which, (_, params) in zip(("first", "second"), pair):
            for name in SHAPES:
                err, index = _rel_err(params[name], lone[k][name])
                if err > tol:
                    raise CheckFailure(
                        f"{kind.name}: two optimizers built the same way and stepped in turn (two models trained "
                        f"side by side) do not move their parameters as one alone does: after step {k + 1}, the "
                        f"{which} one's {name!r} is off by {err:.1e} of its scale at {index}. Does step keep its "
                        "step count or moments outside the instance (a module-level or class-level counter or "
                        "dict)? Keep them on self", {"step": k + 1, "parameter": name, "max_error": err})


def _other_setting(kind, cfg, params0, grads_seq):
    """The second run's changes to cfg (weight decay switched, every field of OTHER_VALUES moved: an SGD that
    reads beta1 then differs from one that hard-codes 0.9), and the fields its words show: weight_decay and
    those the reference optimizer reads (its first two steps move when the field alone is moved)."""
    def first_steps(c):
        return run_optimizer(reference_impl().get(kind.name).target(c), params0, grads_seq[:2])[0]

    base = first_steps(cfg)
    changes, shown = {"weight_decay": 0.0 if cfg.weight_decay > 0 else OTHER_DECAY}, ["weight_decay"]
    for name, other in OTHER_VALUES.items():
        changes[name] = other(getattr(cfg, name))
        moved = first_steps(cfg.replace(**{name: changes[name]}))
        if any(not np.array_equal(a[n], b[n]) for a, b in zip(base, moved) for n in SHAPES):
            shown.append(name)
    return changes, tuple(shown)


def _same_again(subject, params0, grads_seq):
    """After a second optimizer failed, the first setting once more on a new optimizer: if what passed
    now fails, instances share state (a class-level dict or counter), and that is the finding."""
    try:
        _optimizer_run(subject, params0, grads_seq)
    except CheckFailure as again:
        raise CheckFailure(
            f"{subject.kind.name}: two optimizers built the same way and given the same {STEPS} steps move the "
            f"parameters differently: the first matched the reference, a later one did not ({again}). Does step "
            "share state between instances (a class-level dict or counter)?", again.metrics, again.details) from None


def _optimizer_run(subject, params0, grads_seq, shown=("weight_decay",), second=False):
    """One run of STEPS steps against the reference; its words name the cfg fields `shown` (the setting), and
    `second`: that gradlab moved them (the run after the cfg's own)."""
    kind, cfg = subject.kind, subject.cfg
    setting = ("gradlab's second run's " if second else "") + \
        ", ".join(f"{name}={getattr(cfg, name):g}" for name in shown)
    ref_opt = reference_impl().get(kind.name).target(cfg)
    want, _ = run_optimizer(ref_opt, params0, grads_seq)

    optimizer = subject.build()
    params = {n: p.copy() for n, p in params0.items()}
    arrays = dict(params)                     # the caller's own arrays: step must update these
    got, crash = [], None
    for k, grads in enumerate(grads_seq):
        try:
            subject.step(optimizer, params, {n: g.copy() for n, g in grads.items()})
        except StudentError as e:
            crash = e
            break
        rebound = [n for n in arrays if params.get(n) is not arrays[n]]
        if rebound:
            raise CheckFailure(f"{kind.name} ({setting}): step {k + 1} replaced params[{rebound[0]!r}] with a new "
                               "array instead "
                               "of updating it in place: write p -= ... (or p[...] = ...), not params[name] = ...",
                               {"step": k + 1, "parameter": rebound[0]})
        got.append({n: a.astype(np.float64) for n, a in arrays.items()})
    if cfg.np_dtype == np.float64 and got and (computed_eps(v for step in got for v in step.values()) > EPS["float64"]
                                               or _updates_in_float32(params0, got)):
        # every parameter the student's steps wrote is a float32 number, or every step's change to it is (moments
        # kept in float32): it computes in float32 whatever cfg.dtype says (CONTRACT §6), and is judged as a
        # float32 optimizer is
        cfg = cfg.replace(dtype="float32")
    errors = [{n: _rel_err(g[n], w[n]) for n in SHAPES} for g, w in zip(got, want)]
    tol, allowed, first_bad = _judged(kind, cfg, params0, grads_seq, want, errors)
    float32_note = ""
    if first_bad is not None and cfg.np_dtype == np.float64:
        # float32 moments whose updates do not come out as float32 numbers (a float64 scalar such as
        # np.sqrt(1 - beta2 ** t) in the update, or AdamW's decay p *= 1 - lr * wd applied in float64): every
        # step within the bar a float32 optimizer gets (the steps are chosen so that eps, bias correction and
        # decay show at float32's precision too) is that, and is judged so, saying it
        tol32, allowed32, bad32 = _judged(kind, cfg.replace(dtype="float32"), params0, grads_seq, want, errors)
        if bad32 is None:
            cfg, tol, allowed, first_bad = cfg.replace(dtype="float32"), tol32, allowed32, None
            float32_note = ("; judged at float32's precision: the steps differ from the float64 reference by "
                            "float32's rounding, as an optimizer that keeps its moments in float32 does")
    series = {n: [e[n][0] for e in errors] for n in SHAPES}
    rows = [{"step": k + 1, **{n: e[n][0] for n in SHAPES}} for k, e in enumerate(errors)]
    details = {"views": [curve(f"max |student - reference| per step (relative to the parameter's scale), {setting}",
                               series, ylabel="relative error"), table(f"error per step and parameter, {setting}", rows)]}
    widest = max((a for step_allowed in allowed for a in step_allowed.values()), default=tol)
    metrics = {"steps": len(got), "max_error": max((v[0] for e in errors for v in e.values()), default=0.0),
               "tolerance": widest}
    if first_bad is None:
        if crash is not None:
            raise crash
        return Outcome(f"{STEPS} steps on {len(SHAPES)} parameters match the reference with {setting} (max error "
                       f"{metrics['max_error']:.1e}, tolerance {_tol_text(tol, widest, cfg.np_dtype)}{float32_note})",
                       metrics, details)
    k, name = first_bad
    allow = allowed[k][name]
    err, index = errors[k][name]
    g, w = got[k][name][index], want[k][name][index]
    hint = _optimizer_hint(kind.name, cfg, params0, grads_seq, got, want, allow)
    if not np.isfinite(g):
        hint = hint or (f"the update made it {g}: a division by zero? e.g. a bias correction 1 - beta**t with "
                        "t = 0 (increment t at the start of step(), so the first step uses t = 1)")
    metrics.update({"step": k + 1, "parameter": name, "weight_decay": cfg.weight_decay})
    tg, tw = distinct(g, w, least=10)
    raise CheckFailure(
        f"{kind.name} ({setting}): after step {k + 1}, parameter {name!r} {SHAPES[name]} differs from the reference "
        f"(PyTorch semantics) at index {index}: got {tg}, reference {tw} (error {err:.1e} of its scale, tolerance "
        f"{_tol_text(tol, allow, cfg.np_dtype)})" + (f"; likely cause: {hint}" if hint else "")
        + ("" if crash is None else f"; later, step {len(got) + 1} raised: {crash}"), metrics, details)


def _updates_in_float32(params0, got):
    """Every step changed every parameter by a float32 number, up to the float64 rounding of applying it and of
    taking the change back out (an ulp of the larger of the parameter before and after, each: a parameter of
    -0.0025 moved by 0.0138 rounds at 0.011's scale, not at 0.0025's), and some change is not 0: an update
    computed in float32 (moments kept in float32) applied to float64 parameters. A float64 update of 1e-3 to
    a parameter of 1 is a float32 number to within 1e-16 with probability ~1e-7 per element."""
    before, moved = params0, False
    for after in got:
        for name, p in after.items():
            p0 = before[name].astype(np.float64)
            change = p - p0
            with np.errstate(over="ignore", invalid="ignore"):
                off = np.abs(change - change.astype(np.float32).astype(np.float64))
            if not np.all(off <= 2 * np.spacing(np.maximum(np.abs(p0), np.abs(p)))):
                return False
            moved = moved or bool(change.any())
        before = after
    return moved


def _judged(kind, cfg, params0, grads_seq, want, errors):
    """(the table's tolerance, the error allowed per step and parameter, the first (step, parameter) over it or
    None) for a trajectory judged in cfg's dtype."""
    tol = tolerance("trajectory", cfg.np_dtype).rtol
    allowed = _allowed(kind, cfg, params0, grads_seq, want, tol)
    first_bad = next(((k, n) for k, e in enumerate(errors) for n in SHAPES if e[n][0] > allowed[k][n]), None)
    return tol, allowed, first_bad


def _allowed(kind, cfg, params0, grads_seq, want, tol):
    """Per step and parameter, the error allowed (relative to the parameter's scale): the table's tol, plus,
    for a coarser dtype than float64, SAFETY x the rounding of this very trajectory, measured by running the
    reference in that dtype on the same numbers. Adam with beta2 = 0 divides m by |g|: a step after a
    gradient of 1e-5 moves a parameter by lr x 1e4 or more, and float32's rounding of that move is far
    above 1e-6 of the parameter; a well-conditioned trajectory measures ~1e-7 and keeps the table's bar."""
    if cfg.np_dtype == np.float64:
        return [{n: tol for n in SHAPES} for _ in want]
    low, _ = run_optimizer(reference_impl().get(kind.name).target(cfg), params0, grads_seq, dtype=cfg.np_dtype)
    allowed = []
    for k, w in enumerate(want):
        measured = {n: _rel_err(low[k][n], w[n])[0] if k < len(low) else np.inf for n in SHAPES}
        allowed.append({n: tol + SAFETY * measured[n] if np.isfinite(measured[n]) else tol for n in SHAPES})
    return allowed


def _tol_text(tol, widest, dtype):
    return f"{tol:.0e}" if widest <= tol else \
        f"{tol:.0e} + {SAFETY:g} x the {(widest - tol) / SAFETY:.1e} the reference itself rounds to in {dtype.name}"


def _rel_err(got, want):
    """(error relative to the parameter's scale, index of the worst element)."""
    err = np.abs(np.asarray(got, dtype=np.float64) - want)
    err[~np.isfinite(err)] = np.inf          # nan > tol is False: a NaN parameter must count as wrong
    k = np.unravel_index(int(np.argmax(err)), err.shape)
    return float(err[k]) / max(1.0, float(np.abs(want).max())), tuple(int(i) for i in k)


def _optimizer_hint(kind_name, cfg, params0, grads_seq, got, want, tol):
    """The known optimizer mistake whose trajectory reproduces the student's to tolerance (the one matcher)."""
    err_ref = max(_rel_err(g[n], w[n])[0] for g, w in zip(got, want) for n in SHAPES)
    candidates = []
    for hint, make in OPTIMIZER_VARIANTS.get(kind_name, ()):
        traj, _ = run_optimizer(make(cfg), params0, grads_seq)
        steps = min(len(traj), len(got))
        if steps == 0:
            continue
        err = max(_rel_err(got[k][n], traj[k][n])[0] for k in range(steps) for n in SHAPES)
        candidates.append((hint, err / tol, err_ref / tol))
    return name_cause(candidates)


class _Adam:
    """Adam/AdamW with switches for the known mistakes (all off: PyTorch)."""

    def __init__(self, cfg, decay, t_per_param=False, correct_m=True, correct_v=True, eps_inside=False,
                 shared=False, eps_hat=False, matrices_only=False, t_offset=0):
        self.lr, self.b1, self.b2, self.eps, self.wd = cfg.lr, cfg.beta1, cfg.beta2, cfg.eps, cfg.weight_decay
        self.decay, self.t_per_param, self.shared = decay, t_per_param, shared
        self.matrices_only = matrices_only      # decay only parameters of 2 or more axes (nanoGPT's groups)
        self.correct_m, self.correct_v, self.eps_inside = correct_m, correct_v, eps_inside
        self.eps_hat = eps_hat
        self.t, self.m, self.v = t_offset, {}, {}     # t_offset 1: t started at 1 before its first increment

    def step(self, params, grads):
        if not self.t_per_param:
            self.t += 1
        for name, p in params.items():
            if self.t_per_param:
                self.t += 1
            g = grads[name]
            if self.wd > 0 and (p.ndim >= 2 or not self.matrices_only):
                if self.decay == "before":
                    p *= 1 - self.lr * self.wd
                elif self.decay == "coupled":
                    g = g + self.wd * p
                elif self.decay == "no_lr":
                    p *= 1 - self.wd
                elif self.decay == "twice":
                    p *= 1 - self.lr * self.wd
            key = _state_key(self.shared, name, p)
            m = self.m[key] = self.b1 * self.m.get(key, 0) + (1 - self.b1) * g
            v = self.v[key] = self.b2 * self.v.get(key, 0) + (1 - self.b2) * g * g
            m_hat = m / (1 - self.b1 ** self.t) if self.correct_m else m
            v_hat = v / (1 - self.b2 ** self.t) if self.correct_v else v
            denom = np.sqrt(v_hat + self.eps) if self.eps_inside else np.sqrt(v_hat) + self.eps
            if self.eps_hat:      # the Adam paper's "efficient" form: eps added before v's bias correction
                denom = (np.sqrt(v) + self.eps) / np.sqrt(1 - self.b2 ** self.t)
            update = m_hat / denom
            if self.wd > 0 and self.decay == "twice":     # decayed above, and again inside the update
                update = update + self.wd * p
            p -= self.lr * update
            if self.wd > 0 and self.decay == "after":
                p *= 1 - self.lr * self.wd


class _SGD:
    def __init__(self, cfg, momentum=True, shared=False, dampening=False, nesterov=False, zero_start=False,
                 decay=True):
        self.lr, self.mu, self.wd = cfg.lr, cfg.momentum, cfg.weight_decay if decay else 0.0
        self.decoupled = decay == "decoupled"     # p *= 1 - lr * wd, beside the buffer (AdamW's way)
        self.momentum, self.shared, self.dampening, self.nesterov = momentum, shared, dampening, nesterov
        self.zero_start = zero_start     # buf starts at 0 (buf = momentum * 0 + ... on the first step)
        self.buf = {}

    def step(self, params, grads):
        for name, p in params.items():
            g = grads[name]
            if self.wd > 0 and self.decoupled:
                p *= 1 - self.lr * self.wd
            elif self.wd > 0:
                g = g + self.wd * p
            if self.momentum and self.mu > 0:
                key = _state_key(self.shared, name, p)
                if key not in self.buf and not self.zero_start:
                    self.buf[key] = g.copy()
                else:
                    self.buf[key] = self.mu * self.buf.get(key, 0.0) + ((1 - self.mu) * g if self.dampening else g)
                g = g + self.mu * self.buf[key] if self.nesterov else self.buf[key]
            p -= self.lr * g


def _state_key(shared, name, p):
    """Where a variant keeps a parameter's state: per name (PyTorch), one for all (shared=True), or per shape
    (shared="shape": a dict keyed by p.shape, which same-shaped parameters share)."""
    return "all" if shared is True else tuple(p.shape) if shared == "shape" else name


_T_HINT = ("t is counted per parameter (t += 1 inside the loop over parameters), so from the second parameter on "
           "the bias correction uses the wrong t; increment t once per step() call")
_ADAM_COMMON = [
    (_T_HINT, dict(t_per_param=True)),
    ("no bias correction: divide m by (1 - beta1**t) and v by (1 - beta2**t)", dict(correct_m=False, correct_v=False)),
    ("only v is bias-corrected: m_hat = m / (1 - beta1**t) is missing", dict(correct_m=False)),
    ("only m is bias-corrected: v_hat = v / (1 - beta2**t) is missing", dict(correct_v=False)),
    ("eps is inside the square root: the update is m_hat / (sqrt(v_hat) + eps), not m_hat / sqrt(v_hat + eps)",
     dict(eps_inside=True)),
    ("one m and v shared by all parameters: keep the moment estimates per parameter (e.g. a dict keyed by name)",
     dict(shared=True)),
    ("m and v are kept per shape (a dict keyed by p.shape), so parameters of the same shape share them: keep "
     "them per parameter (a dict keyed by name)", dict(shared="shape")),
    ("t starts at 1 and is incremented before the update, so the bias correction of step k uses k + 1: start t "
     "at 0 (the first step is t = 1)", dict(t_offset=1)),
    ("eps is added before v's bias correction (the Adam paper's 'efficient' form lr * sqrt(1 - beta2**t) / "
     "(1 - beta1**t) * m / (sqrt(v) + eps), as TensorFlow does); PyTorch adds eps after it: "
     "m_hat / (sqrt(v_hat) + eps)", dict(eps_hat=True)),
]

_FIXED_BETAS = ("beta1 and beta2 stay 0.9 and 0.999 whatever cfg says (hard-coded?): read cfg.beta1 and cfg.beta2",
                lambda cfg: cfg.replace(beta1=0.9, beta2=0.999))
_FIXED_EPS = ("eps stays 1e-8 whatever cfg.eps says (hard-coded?): read cfg.eps",
              lambda cfg: cfg.replace(eps=1e-8))
_FIXED_MOMENTUM = ("the momentum stays 0.9 whatever cfg.momentum says (hard-coded?): read cfg.momentum",
                   lambda cfg: cfg.replace(momentum=0.9))
_BETA1_MOMENTUM = ("the momentum is cfg.beta1 (Adam's), not cfg.momentum: both are 0.9 by default",
                   lambda cfg: cfg.replace(momentum=cfg.beta1))


def _fixed(hint_and_cfg, make):
    """A variant that runs `make` on the cfg as the student's code would see it with a value hard-coded."""
    hint, fixed = hint_and_cfg
    return hint, lambda cfg: make(fixed(cfg))


OPTIMIZER_VARIANTS = {
    "adam": [(h, (lambda kw: lambda cfg: _Adam(cfg, "coupled", **kw))(kw)) for h, kw in _ADAM_COMMON] + [
        _fixed(_FIXED_BETAS, lambda cfg: _Adam(cfg, "coupled")),
        _fixed(_FIXED_EPS, lambda cfg: _Adam(cfg, "coupled")),
        ("weight decay is decoupled (AdamW style); torch.optim.Adam adds weight_decay * theta to the gradient",
         lambda cfg: _Adam(cfg, "before")),
        ("weight_decay is ignored; torch.optim.Adam adds weight_decay * theta to the gradient",
         lambda cfg: _Adam(cfg, "none")),
    ],
    "adamw": [(h, (lambda kw: lambda cfg: _Adam(cfg, "before", **kw))(kw)) for h, kw in _ADAM_COMMON] + [
        _fixed(_FIXED_BETAS, lambda cfg: _Adam(cfg, "before")),
        _fixed(_FIXED_EPS, lambda cfg: _Adam(cfg, "before")),
        ("the weights are decayed after the Adam update; AdamW decays first: theta *= 1 - lr * weight_decay, "
         "then the update", lambda cfg: _Adam(cfg, "after")),
        ("weight decay is coupled into the gradient (g += weight_decay * theta, plain Adam with L2); AdamW decays "
         "the weights directly: theta *= 1 - lr * weight_decay", lambda cfg: _Adam(cfg, "coupled")),
        ("the decay is not multiplied by lr: theta *= 1 - lr * weight_decay, not 1 - weight_decay",
         lambda cfg: _Adam(cfg, "no_lr")),
        ("no weight decay is applied: AdamW decays theta *= 1 - lr * weight_decay before the update",
         lambda cfg: _Adam(cfg, "none")),
        ("the weights are decayed twice (theta *= 1 - lr * weight_decay, and again lr * weight_decay * theta in "
         "the update); decay once, before the Adam update", lambda cfg: _Adam(cfg, "twice")),
        ("only parameters with 2 or more axes are decayed (nanoGPT's parameter groups leave biases and gains "
         "out); torch.optim.AdamW, and the contract, decay every parameter it is given",
         lambda cfg: _Adam(cfg, "before", matrices_only=True)),
    ],
    "sgd": [
        _fixed(_FIXED_MOMENTUM, lambda cfg: _SGD(cfg)),
        _fixed(_BETA1_MOMENTUM, lambda cfg: _SGD(cfg)),
        ("the momentum buffer is missing: buf = momentum * buf + g, then p -= lr * buf",
         lambda cfg: _SGD(cfg, momentum=False)),
        ("one momentum buffer is shared by all parameters: keep a buffer per parameter (e.g. a dict keyed by name)",
         lambda cfg: _SGD(cfg, shared=True)),
        ("the momentum buffer is kept per shape (a dict keyed by p.shape), so parameters of the same shape share "
         "it: keep one per parameter (a dict keyed by name)", lambda cfg: _SGD(cfg, shared="shape")),
        ("the momentum buffer is damped (buf = momentum * buf + (1 - momentum) * g); PyTorch adds g undamped",
         lambda cfg: _SGD(cfg, dampening=True)),
        ("the momentum buffer is a damped moving average started at zero (buf = momentum * buf + (1 - momentum) * g); "
         "PyTorch adds g undamped: buf = momentum * buf + g (buf = g on the first step)",
         lambda cfg: _SGD(cfg, dampening=True, zero_start=True)),
        ("this is Nesterov momentum; PyTorch's default SGD uses p -= lr * buf", lambda cfg: _SGD(cfg, nesterov=True)),
        ("weight_decay is ignored; torch.optim.SGD adds weight_decay * p to the gradient (g = g + weight_decay * p, "
         "before the momentum buffer)", lambda cfg: _SGD(cfg, decay=False)),
        ("the weight decay is decoupled (p *= 1 - lr * weight_decay, beside the momentum buffer, AdamW's way); "
         "torch.optim.SGD adds weight_decay * p to the gradient before the buffer, so the decay rides the momentum",
         lambda cfg: _SGD(cfg, decay="decoupled")),
    ],
}


# ---- gradient clipping --------------------------------------------------------------

CLIP_SHAPES = [(3,), (4, 3), (2, 2, 2)]
# (total norm in units of the call's max_norm: above and below 1, the call's max_norm in units of cfg's): a
# max_norm hard-coded to the default, or a threshold of its own (norm > 1), shows at the other max_norms
CLIP_CALLS = [(3.0, 1.0), (0.5, 1.0), (10.0, 1.0), (0.9, 2.5), (1.5, 2.5), (1.5, 0.4)]


def _clip(subject, rng):
    cfg = subject.cfg
    tol = tolerance("clip", cfg.np_dtype).rtol
    ref = reference_impl().get(subject.kind.name).target
    rows, series = [], {"returned": [], "reference": []}
    scaled_in_place = False      # an earlier call clipped, right
    for k, (factor, moved) in enumerate(CLIP_CALLS):
        max_norm = cfg.max_norm * moved
        grads = [rng.standard_normal(s) for s in CLIP_SHAPES]
        norm = math.sqrt(sum(float((g * g).sum()) for g in grads))
        grads = [(g * factor * max_norm / norm).astype(cfg.np_dtype) for g in grads]
        given = [g.copy() for g in grads]
        theirs = list(given)      # the caller's arrays are `given`: the list's elements may be rebound
        ours = [g.astype(np.float64) for g in grads]
        returned = call_scalar(subject, "clip_grad_norm(grads, max_norm)", theirs, max_norm)
        expected = ref(ours, max_norm)
        rebound = [i for i, (a, b) in enumerate(zip(given, theirs)) if a is not b]
        if rebound and _arrays_off(theirs, ours) <= tol < _arrays_off(given, ours):
            raise CheckFailure(
                f"clip_grad_norm: call {k + 1}: grads[{rebound[0]}] was replaced in the list by a new array "
                f"({len(rebound)} of {len(given)} replaced, e.g. grads[i] = g * scale): the list holds clipped values "
                "but the arrays the caller gave (a model's gradient arrays, held elsewhere too) are not clipped; "
                "scale each array in place: g *= scale", {"call": k + 1, "max_norm": max_norm},
                {"views": [table("clip_grad_norm calls", rows)]})
        theirs = given
        series["returned"].append(returned)
        series["reference"].append(expected)
        r_err = abs(returned - expected) / max(abs(expected), 1e-12)
        a_errs = [_off(t, o) for t, o in zip(theirs, ours)]
        worst = int(np.argmax(a_errs))
        rows.append({"call": k + 1, "norm before": expected, "returned": returned, "return error": r_err,
                     "grads error": a_errs[worst]})
        if r_err <= tol and a_errs[worst] <= tol:
            scaled_in_place = scaled_in_place or expected > max_norm
            continue
        details = {"views": [table("clip_grad_norm calls", rows),
                             curve("returned norm vs reference", series, xlabel="call")]}
        metrics = {"call": k + 1, "total_norm": expected, "max_norm": max_norm}
        hint = _clip_hint(grads, max_norm, returned, theirs, tol, scaled_in_place)
        clipped = expected > max_norm
        situation = (f"grads of total norm {expected:.6g} {'>' if clipped else '<='} max_norm {max_norm:g}, "
                     + ("so they must be scaled by max_norm / (total_norm + 1e-6)" if clipped
                        else "so they must be left unchanged"))
        if r_err > tol:
            tr, te = distinct(returned, expected, least=8)
            what = f"returned {tr}, expected the norm before clipping {te}"
        else:
            idx = tuple(int(i) for i in np.unravel_index(
                int(np.argmax(np.abs(theirs[worst] - ours[worst]))), ours[worst].shape))
            tt, to = distinct(float(theirs[worst][idx]), float(ours[worst][idx]), least=8)
            what = f"grads[{worst}] at index {idx} is {tt} after the call, expected {to}"
        raise CheckFailure(f"clip_grad_norm: call {k + 1} ({situation}): {what}"
                           + (f"; likely cause: {hint}" if hint else ""), metrics, details)
    details = {"views": [table("clip_grad_norm calls", rows),
                         curve("returned norm vs reference", series, xlabel="call")]}
    norms = ", ".join(f"{cfg.max_norm * m:g}" for m in dict.fromkeys(m for _, m in CLIP_CALLS))
    return Outcome(f"{len(CLIP_CALLS)} calls (norms above and below max_norm, max_norm {norms}) match: global norm "
                   "returned before clipping, grads scaled in place", {"calls": len(CLIP_CALLS)}, details)


def _off(x, y):
    """|x - y| of two arrays, largest, relative to y's largest entry."""
    return float(np.abs(x - y).max()) / max(float(np.abs(y).max()), 1e-12)


def _arrays_off(xs, ys):
    """The worst relative difference between two lists of arrays (each against ys' largest entry)."""
    return max(_off(x, y) for x, y in zip(xs, ys))


def _clip_hint(grads, max_norm, returned, theirs, tol, scaled_in_place=False):
    """The cause of a wrong call, or None. scaled_in_place: an earlier call clipped its grads right (so they
    are scaled in place, and a call that leaves them as they were has a threshold of its own)."""
    g64 = [g.astype(np.float64) for g in grads]
    norm = math.sqrt(sum(float((g * g).sum()) for g in g64))
    scale = max_norm / (norm + 1e-6)
    per_tensor = [g * min(1.0, max_norm / (np.linalg.norm(g) + 1e-6)) for g in g64]
    rms = norm / math.sqrt(sum(g.size for g in g64))
    variants = [
        ("the norm is a root-mean-square (np.sqrt(np.mean(g ** 2))) over the entries; the total norm is the square "
         "root of the sum of all squares: np.sqrt(sum((g ** 2).sum() for g in grads))", rms,
         [g * min(1.0, max_norm / (rms + 1e-6)) for g in g64]),
        ("the grads are not changed in place (a new list or new arrays are made, e.g. g = g * scale, and the "
         "caller's arrays stay as they were): scale them in place with g *= scale", None, g64)
        if not scaled_in_place else
        (f"the grads are left as they are at a total norm of {norm:.6g}, above max_norm {max_norm:g} (an earlier call "
         "clipped in place, right): a threshold of its own (norm > 1, or max_norm read as something else)? Clip "
         "whenever max_norm / (total_norm + 1e-6) < 1", None, g64),
        ("it returns the norm after clipping; return the total norm measured before clipping", min(norm, max_norm),
         None),
        ("each array is clipped by its own norm; clip_grad_norm uses one global norm over all arrays", None,
         per_tensor),
        ("each array is clipped by its own norm, and the norm returned is measured after that; clip_grad_norm uses "
         "one global norm over all arrays and returns it as it was before clipping",
         math.sqrt(sum(float((g * g).sum()) for g in per_tensor)), per_tensor),
        ("the grads are scaled even when their norm is below max_norm (scaled up); scale only when "
         "max_norm / (total_norm + 1e-6) < 1", None, [g * scale for g in g64]),
        ("it returns the squared norm; take the square root", norm * norm, None),
        ("it returns the clipping factor; return the total norm", min(1.0, scale), None),
        ("max_norm is not used: the grads are clipped to a total norm of 1 whatever max_norm says (a hard-coded "
         "1.0 in max_norm / (total_norm + 1e-6)?)", None, [g * min(1.0, 1.0 / (norm + 1e-6)) for g in g64]),
    ]
    def off(x, y):            # |x - y| in multiples of the tolerance
        return abs(x - y) / (tol * max(abs(y), 1e-12))

    def off_arrays(xs, ys):
        return _arrays_off(xs, ys) / tol

    reference = [g * min(1.0, scale) for g in g64]
    # each variant is judged on both results (a variant that changes only one keeps the reference's other: an
    # array-only cause cannot explain a wrong returned norm), against how far the correct result is from the
    # student's: a variant that agrees with the reference on this call explains nothing (below max_norm,
    # "returns the clipped norm" returns the right number)
    right = max(off(returned, norm), off_arrays(theirs, reference))
    candidates = [(hint, max(off(returned, norm if value is None else value),
                             off_arrays(theirs, reference if arrays is None else arrays)), right)
                  for hint, value, arrays in variants]
    return name_cause(candidates)


# ---- learning-rate schedule -----------------------------------------------------------

def _steps(W):
    """Warmup, the peak and the decay: every step to 3 * warmup_steps, then two far ones."""
    return list(range(1, 3 * W + 1)) + [10 * W, 100 * W]


def _schedule(subject):
    cfg = subject.cfg
    D, W = cfg.d_model, cfg.warmup_steps
    steps = _steps(W)
    got = [call_scalar(subject, f"schedule({s}, {D}, {W})", s, D, W) for s in steps]
    return _compare_schedule(subject, steps, got)


def _scheduler(subject):
    """The stateful form (article 000's WarmupScheduler): each call is the next step; the same curve as
    the function `schedule`. A second instance must start again at step 1 (no shared count)."""
    cfg = subject.cfg
    steps = _steps(cfg.warmup_steps)
    first, second = Scheduler(subject, subject.build()), Scheduler(subject, subject.build())
    values = [first.next()]
    again = second.next()
    if abs(again - values[0]) > tolerance("schedule", cfg.np_dtype).rtol * abs(values[0]):
        raise CheckFailure(
            f"{subject.kind.name}: two schedulers built one after the other return {values[0]:.8g} and {again:.8g} "
            "on their first calls: the step count is shared between instances (a class attribute or a "
            "module-level counter?); keep it on self, set in __init__", {"first": values[0], "second": again})
    values += first.take(steps[-1] - 1)
    outcome = _compare_schedule(subject, steps, [values[s - 1] for s in steps])
    outcome.message += "; two instances count their steps separately"
    # again built with warmup_steps moved: a scheduler that hard-codes the default matches it at the default only
    other = subject.with_cfg(cfg.replace(warmup_steps=2 * cfg.warmup_steps + 1))
    moved_steps = _steps(other.cfg.warmup_steps)[:-1]        # (the farthest step: no other warmup shows there)
    third = Scheduler(other, other.build())
    moved = [third.next()] + third.take(moved_steps[-1] - 1)
    got = [moved[s - 1] for s in moved_steps]
    try:
        _compare_schedule(other, moved_steps, got)
    except CheckFailure as e:
        ref = reference_impl().get("schedule").target
        if all(abs(g - ref(s, cfg.d_model, cfg.warmup_steps)) <= 1e-6 * abs(g) for s, g in zip(moved_steps, got)):
            raise CheckFailure(f"{subject.kind.name}: right with warmup_steps = {cfg.warmup_steps}, but built with "
                               f"cfg.warmup_steps = {other.cfg.warmup_steps} it still follows warmup_steps = "
                               f"{cfg.warmup_steps}: build(cfg) does not pass cfg.warmup_steps on (a hard-coded "
                               f"{cfg.warmup_steps}?)", {"warmup_steps": other.cfg.warmup_steps},
                               e.details) from None
        raise
    outcome.message += f"; and again built with warmup_steps = {other.cfg.warmup_steps}"
    return outcome


def _compare_schedule(subject, steps, got):
    """got[k]: the student's lr at steps[k], against the `schedule` reference and its known slips."""
    cfg = subject.cfg
    ref = reference_impl().get("schedule").target
    D, W = cfg.d_model, cfg.warmup_steps
    want = [ref(s, D, W) for s in steps]
    errs = [abs(g - w) / abs(w) for g, w in zip(got, want)]
    rows = [{"step": s, "lr": g, "reference": w, "error": e} for s, g, w, e in zip(steps, got, want, errs)]
    details = {"views": [curve("learning rate per step", {"yours": got, "reference": want}),
                         table("schedule values", rows)]}
    # Python floats are judged as float64 whatever cfg.dtype says; values that are float32 numbers as float32
    tol = tolerance("schedule", computed_dtype([np.array(got)], "float64")).rtol
    bad = [i for i, e in enumerate(errs) if e > tol]
    if not bad:
        return Outcome(f"{len(steps)} steps (warmup and decay) match the reference", {"steps": len(steps)}, details)
    i = bad[0]
    hint = _schedule_hint(steps, got, want, D, W, tol)
    tg, tw = distinct(got[i], want[i], least=8)
    raise CheckFailure(
        f"{subject.kind.name}: step {steps[i]} (d_model={D}, warmup_steps={W}) gives lr {tg}, reference {tw} "
        f"(d_model**-0.5 * min(step**-0.5, step * warmup_steps**-1.5), steps counted from 1)"
        + (f"; likely cause: {hint}" if hint else f"; wrong at {len(bad)} of {len(steps)} steps"),
        {"step": steps[i], "lr": got[i], "reference": want[i]}, details)


def _noam(s, D, W, a=-0.5, b=-1.5, fn=min, dpow=-0.5):
    return D ** dpow * fn(s ** a, s * W ** b)


def _schedule_hint(steps, got, want, D, W, tol):
    variants = [
        ("steps are counted from 0 (the value of step + 1 is returned): the first call is step=1",
         lambda s: _noam(s + 1, D, W)),
        ("the step is off by one the other way (step - 1)", lambda s: _noam(s - 1, D, W) if s > 1 else None),
        ("the warmup term uses warmup_steps**-0.5; it is step * warmup_steps**-1.5", lambda s: _noam(s, D, W, b=-0.5)),
        ("the warmup term is step / warmup_steps (warmup_steps**-1.0); it is step * warmup_steps**-1.5",
         lambda s: _noam(s, D, W, b=-1.0)),
        ("max instead of min of step**-0.5 and step * warmup_steps**-1.5", lambda s: _noam(s, D, W, fn=max)),
        ("the d_model**-0.5 factor is missing", lambda s: _noam(s, D, W, dpow=0)),
        ("d_model**0.5 instead of d_model**-0.5", lambda s: _noam(s, D, W, dpow=0.5)),
        ("warmup_steps**1.5 instead of warmup_steps**-1.5", lambda s: _noam(s, D, W, b=1.5)),
        ("the decay term uses step**0.5; it is step**-0.5", lambda s: _noam(s, D, W, a=0.5)),
    ]
    def off(values):           # worst relative difference from the student's values, in tolerances
        return max(abs(g - v) / (tol * abs(v)) if v else (0.0 if g == v else math.inf)
                   for g, v in zip(got, values) if v is not None)

    return name_cause([(hint, off([fn(s) for s in steps]), off(want)) for hint, fn in variants])
