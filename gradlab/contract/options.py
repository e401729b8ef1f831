"""Every option of a run, with its type, its range and the reason for the range
(CONTRACT §4), checked before any check runs.

One table (`FIELDS` for the cfg fields, `FLAGS` for the command's flags) and one
helper (`refuse`) through which every refusal goes, so that every message says
the same three things in the same order: the value as the user wrote it, what is
wrong with it, and what to write instead:

    beta1=2: must be in [0, 1) (Adam's average of past gradients forgets nothing at 1 and grows past it); e.g. --set beta1=0.9

A refused option is a UsageError: exit 2 and that one line in the CLI, a raised
gradlab.UsageError in the Python API, a usage error in the pytest plugin. It is
never blamed on the student's module and never reaches a check.

Sizes get a second rule that depends on the kind and the checks chosen: the
work the checks would do (`estimate`) must fit in about a minute, or the run is
refused with the size that would fit.
"""
import difflib
import math
import numbers
import operator
import os
import tempfile
from dataclasses import dataclass

import numpy as np

from gradlab.contract.errors import UsageError


MEMORY_MIN_MB = 256     # NumPy and SciPy alone take ~0.25 GB of address space
WALL_MIN = 0.1          # seconds; as --timeout's least (a worker takes about that to import a file)


def check_limit(flag, value):
    """A worker limit from the command line (--wall-time, --max-memory, --max-output, and pytest's
    --gradlab-wall-time ...): a number >= 0, 0 or inf for none (as --timeout takes them), and a memory limit
    NumPy can start under. Returns the value the Limits take (0 for none); a bad one is refused."""
    what = f"{flag} {shown(value)}"
    if flag.endswith("-max-memory"):
        if value is not None and 0 < value < MEMORY_MIN_MB:
            raise refuse(what, "is less than NumPy alone needs", f"give at least {MEMORY_MIN_MB} (MB), or 0 for no limit")
        if value is None or not (value == 0 or value >= MEMORY_MIN_MB):
            raise refuse(what, f"must be 0 (no limit) or at least {MEMORY_MIN_MB} (MB: NumPy alone needs about "
                         "0.25 GB)", f"e.g. {flag} 4096")
    elif value is None or not value >= 0:
        raise refuse(what, "must be a number >= 0 (0 or inf: no limit)", f"e.g. {flag} 0 for no limit")
    elif flag.endswith("-wall-time") and 0 < value < WALL_MIN:
        raise refuse(what, f"is too small to start the worker (the run's time limit; below {WALL_MIN:g} s it runs out "
                     "before your code does)", f"give a few seconds at least, e.g. {flag} 60, or 0 for no limit")
    return 0 if value == math.inf else value


def check_workers(value, flag="--workers", does="checks no kind"):
    """How many run at once (check: kinds, grade: submissions): None (one per core) or an int >= 1."""
    if value is None:
        return value
    if isinstance(value, float) and value.is_integer():
        value = int(value)                  # (2.0 from Python: whole, as CONTRACT §4 accepts 12.0)
    try:
        value = operator.index(value) if not isinstance(value, bool) else value   # (numpy's integers too)
    except TypeError:
        pass
    if isinstance(value, bool) or not isinstance(value, int):
        raise refuse(f"{flag} {shown(value)}", "must be a whole number", "give 1 or more")
    if value < 1:
        raise refuse(f"{flag} {shown(value)}", f"{does} at a time", "give 1 or more")
    return value


def refuse(what, problem, fix):
    """The one way an option is refused: `what` is the value as given
    ("--seed -5", "beta1=2"), `problem` what is wrong, `fix` what to write."""
    return UsageError(f"{what}: {problem}; {fix}")


def shown(value):
    """A value as the user would have typed it."""
    if isinstance(value, str):
        return repr(value)
    if isinstance(value, float) and value.is_integer() and abs(value) < 1e16:
        return str(int(value))
    if isinstance(value, numbers.Integral) and abs(value) >= 10**16:
        return f"{float(min(value, 10**300)):.3g}"
    return str(value)


@dataclass(frozen=True)
class Rule:
    """A type and a range. `low`/`high` are bounds (None: unbounded);
    `open_low`/`open_high` exclude the bound itself. `choices` for strings."""
    type: type
    why: str
    example: object
    low: float = None
    high: float = None
    open_low: bool = False
    open_high: bool = False
    choices: tuple = ()

    def range_text(self):
        if self.choices:
            return "one of " + ", ".join(repr(c) for c in self.choices)
        if self.type is int and self.low is not None and self.high is None:
            return f"an integer of at least {shown(self.low)}"
        if self.low is not None and self.high is not None:
            noun = "an integer" if self.type is int else "a number"
            return (f"{noun} in {'(' if self.open_low else '['}{shown(self.low)}, "
                    f"{shown(self.high)}{')' if self.open_high else ']'}")
        if self.low is not None:
            return f"{'greater than' if self.open_low else 'at least'} {shown(self.low)}"
        return "a finite number"

    def check(self, what, value, fix):
        """The value converted to the rule's type, or a refusal."""
        if self.type is str:
            if not isinstance(value, str) or (self.choices and value not in self.choices):
                close = difflib.get_close_matches(str(value).lower(), self.choices, n=1) if self.choices else []
                hint = f"did you mean {close[0]!r}? " if close else ""
                raise refuse(what, f"must be {self.range_text()} ({self.why})", f"{hint}{fix}")
            return value
        if isinstance(value, (bool, np.bool_)) or not isinstance(value, numbers.Real):
            raise refuse(what, f"must be {'an integer' if self.type is int else 'a number'}, "
                         f"not {type(value).__name__}", fix)
        if not math.isfinite(value):
            raise refuse(what, f"must be finite: {self.range_text()} ({self.why})", fix)
        if self.type is int:
            if value != int(value):
                raise refuse(what, "must be a whole number", fix)
            value = int(value)
        else:
            value = float(value)
        if not self._in_range(value):
            raise refuse(what, f"must be {self.range_text()} ({self.why})", fix)
        return value

    def fits(self, value):
        """True when `value` is of the rule's own type (int, float or str) and allowed: check() would
        return it unchanged. Every Config runs every field through the table, and a cfg is made several
        times per run: the words of a refusal are worked out only when there is one."""
        if type(value) is not self.type:
            return False
        if self.type is str:
            return not self.choices or value in self.choices
        return math.isfinite(value) and self._in_range(value)

    def _in_range(self, value):
        below = self.low is not None and (value <= self.low if self.open_low else value < self.low)
        above = self.high is not None and (value >= self.high if self.open_high else value > self.high)
        return not (below or above)


POSITIVE = dict(low=0, open_low=True)
FRACTION = dict(low=0, high=1, open_high=True)

# ---- the cfg fields ----------------------------------------------------------------
# The sizes' upper limits are not here: they depend on the kind and on the checks
# chosen (see `estimate`). `dtype` and `seed` have their own rules below.
FIELDS = {
    "batch_size": Rule(int, "samples per batch", 2, low=1),
    "seq_len": Rule(int, "tokens per sample", 5, low=1),
    "d_model": Rule(int, "the model width", 12, low=1),
    "num_heads": Rule(int, "attention heads; d_model must be a multiple of it", 2, low=1),
    "d_ff": Rule(int, "the hidden width of the FFN, and the output width of linear", 20, low=1),
    "vocab_size": Rule(int, "a vocabulary needs at least 2 tokens to predict (one also serves as the "
                       "ignored padding id)", 11, low=2),
    "max_len": Rule(int, "the longest sequence the positional table holds", 8, low=1),
    "n_layers": Rule(int, "transformer blocks in the LM", 2, low=1),
    "eps": Rule(float, "added to a variance (LayerNorm) or a root-mean-square (Adam) to keep a division "
                "finite; above 1 it swamps what it is added to and hides bugs there", 1e-5, low=0, high=1,
                open_low=True),
    "lr": Rule(float, "a step below 1e-8 changes the parameters less than the trajectory check can "
               "resolve, so no bug would show; above 100 the few steps compared overflow", 1e-3,
               low=1e-8, high=100),
    "beta1": Rule(float, "Adam's average of past gradients: at 1 it never moves, above 1 it grows", 0.9,
                  **FRACTION),
    "beta2": Rule(float, "Adam's average of past squared gradients: at 1 it never moves, above 1 it grows",
                  0.999, **FRACTION),
    "weight_decay": Rule(float, "decay pulls parameters towards 0; a negative one pushes them away",
                         0.01, low=0),
    "momentum": Rule(float, "SGD's velocity keeps this fraction of itself each step: 1 or more never "
                     "forgets and diverges", 0.9, **FRACTION),
    "max_norm": Rule(float, "the largest total gradient norm clipping lets through; the trajectory check makes "
                     "gradients of about that norm, whose squares leave float32's range beyond these bounds",
                     1.0, low=1e-6, high=1e6),
    "warmup_steps": Rule(int, "the schedule computes step * warmup_steps**-1.5, which 0 divides by zero; the "
                         "trajectory check calls it at each of the first 3 * warmup_steps steps", 4,
                         low=1, high=10_000),
    "activation": Rule(str, "the FFN activations the contract names: GELU (tanh approximation) or ReLU",
                       "gelu", choices=("gelu", "relu")),
    "dropout": Rule(float, "the probability that dropout drops an entry while training; at 1 nothing is left to "
                    "scale by 1/(1-p)", 0.1, **FRACTION),
    # mixed precision (the mixed_precision kind)
    "loss_scale": Rule(float, "the loss is multiplied by it before a float16 backward; float16's largest number "
                       "is 65504", 1024.0, low=1, high=65504),
    "loss_scaling": Rule(str, "static keeps the scale; dynamic halves it on an overflow and doubles it after "
                         "growth_interval good steps", "dynamic", choices=("dynamic", "static")),
    "growth_interval": Rule(int, "good steps in a row before dynamic loss scaling doubles the scale", 4,
                            low=1, high=10_000),
    "seed": Rule(int, "np.random.seed, which a module may call with it, takes 0 to 2**32 - 1", 0,
                 low=0, high=2**32 - 1),
}
SIZES = ("batch_size", "seq_len", "d_model", "num_heads", "d_ff", "vocab_size", "max_len", "n_layers")
DTYPES = ("float16", "float32", "float64")   # float16: module kinds, gradients against a float64 copy (README)


def field_fix(name, rule=None):
    rule = rule or FIELDS[name]
    return f"e.g. --set {name}={rule.example}"


def check_field(name, value):
    """A cfg field's value, converted to its type, or a refusal naming the field."""
    if name == "dtype":
        return check_dtype(value)
    rule = FIELDS[name]
    if rule.fits(value):
        return value
    return rule.check(f"{name}={shown(value)}", value, field_fix(name))


def check_dtype(value):
    try:
        dtype = np.dtype(value)
    except (TypeError, ValueError):
        raise refuse(f"dtype={shown(value)}", "is not a NumPy dtype", "use float16, float32 or float64") from None
    if dtype.kind != "f":
        raise refuse(f"dtype={shown(value)}", "is not a floating type", "use float16, float32 or float64")
    # float16 is supported for module kinds: its gradients are compared with finite differences of a float64
    # copy of the module, never with finite differences in float16 (README: float16 and mixed precision)
    if dtype.name not in DTYPES:
        raise refuse(f"dtype={shown(value)}", "is not supported", "use float16, float32 or float64")
    return dtype.name


def check_relations(cfg):
    """The rules that tie a Config's fields together (each field is checked on its own first)."""
    if cfg.d_model % cfg.num_heads:
        raise refuse(f"d_model={cfg.d_model}", f"is not divisible by num_heads={cfg.num_heads} "
                     "(each head takes d_model / num_heads of the width)",
                     f"pick d_model as a multiple of num_heads, e.g. --set d_model={cfg.num_heads * 6}")
    if cfg.seq_len > cfg.max_len:
        raise refuse(f"seq_len={cfg.seq_len}", f"is larger than max_len={cfg.max_len} (the positional "
                     "table has max_len rows)", f"raise max_len too (--set max_len={cfg.seq_len})")
    if cfg.dtype != "float16":      # (float16: per kind, check_for_kind; optimizers are not checked in it)
        _eps_fits(cfg)


def check_for_kind(kind, cfg):
    """The rules that depend on the kind checked with cfg (a KindSpec): eps in float16 only for the kinds that
    float16 checks (Adam's default eps, 1e-8, is 0 in float16, and refused `check adam --dtype float16`, whose
    checks are all skipped with the reason, and `check all --dtype float16` with it)."""
    if cfg.dtype == "float16" and kind.in_float16:
        _eps_fits(cfg)


def _eps_fits(cfg):
    tiny = np.finfo(cfg.dtype).tiny
    if cfg.dtype == "float16":   # the default eps, 1e-5, is below float16's smallest normal but not 0 in it
        tiny = np.finfo(cfg.dtype).smallest_subnormal
    if cfg.eps < tiny:
        what = "smallest number" if cfg.dtype == "float16" else "smallest normal number"
        raise refuse(f"eps={shown(cfg.eps)}", f"rounds to 0 in {cfg.dtype} (its {what} is "
                     f"{tiny:.3g}), so the division it guards is no longer guarded", field_fix("eps"))


# ---- the flags ----------------------------------------------------------------------
TIMEOUT_MIN = 0.1   # seconds; shorter limits cut off ordinary calls
TIMEOUT_MAX = 1e6   # seconds; the OS timer refuses more than about 1e9


def check_seed(seed, flag="--seed"):
    """None (a fresh seed is drawn) or an integer in 0 .. 2**32 - 1."""
    if seed is None:
        return None
    return FIELDS["seed"].check(f"{flag} {shown(seed)}", seed, f"e.g. {flag} 5" if flag.startswith("-")
                                else f"e.g. {flag}=5")


def check_timeout(seconds, flag="--timeout"):
    """Seconds for one call into student code: None (the default), 0 or inf (no
    limit), or a positive number up to TIMEOUT_MAX. Returns the value the
    harness takes (0 for no limit)."""
    if seconds is None:
        return None
    what, fix = f"{flag} {shown(seconds)}", f"e.g. {flag} 20 (seconds), or {flag} 0 for no limit"
    if isinstance(seconds, (bool, np.bool_)) or not isinstance(seconds, numbers.Real):
        raise refuse(what, f"must be a number of seconds, not {type(seconds).__name__}", fix)
    if seconds == math.inf or seconds == 0:
        return 0
    return Rule(float, "seconds one call into your code may take: below 0.1 s ordinary calls are cut off, "
                "and the system timer holds at most about 1e9", 20, low=TIMEOUT_MIN, high=TIMEOUT_MAX
                ).check(what, seconds, fix)


def check_output_path(flag, path, default_name, make_folders=False):
    """A file the run will write at the end, checked now by creating (and
    removing) a file in its folder: a bad path is said before the checks run,
    not with a traceback after them. A path the user gives must be in a folder
    that exists (--json and --report alike, CONTRACT §4); `make_folders` is for
    gradlab's own default (reports/KIND.html): missing folders are fine if the
    nearest existing one is writable."""
    what = f"{flag} {path!r}" if not isinstance(path, str) or not path.strip() or path != path.strip() \
        else f"{flag} {path}"
    fix = f"e.g. {flag} {default_name}"
    if not isinstance(path, (str, os.PathLike)) or not os.fspath(path).strip():
        raise refuse(what, "names no file", fix)
    path = os.fspath(path)
    if path == "-":
        raise refuse(what, "would be a file named '-' (standard output is where the check lines go)", fix)
    if os.path.isdir(path):
        raise refuse(what, "is a folder", f"name a file in it, e.g. {flag} {os.path.join(path, os.path.basename(default_name))}")
    folder = os.path.dirname(os.path.abspath(path))
    existing = folder
    while not os.path.exists(existing):
        existing = os.path.dirname(existing)
    if not os.path.isdir(existing):
        raise refuse(what, f"{existing} is a file, not a folder", fix)
    if existing != folder and not make_folders:
        raise refuse(what, f"the folder {folder} does not exist", "create it or choose another path")
    try:
        with tempfile.NamedTemporaryFile(dir=existing, prefix=".gradlab-probe-"):
            pass
        if os.path.exists(path):
            with open(path, "a"):   # appends nothing: only asks whether the file can be written
                pass
    except OSError as e:
        raise refuse(what, f"cannot be written ({e.strerror or e})", fix) from None
    return path


def check_impl(impl):
    """A blank --impl names nothing (None means gradlab's reference)."""
    if isinstance(impl, str) and not impl.strip():
        raise refuse(f"--impl {impl!r}", "names no file or module",
                     "e.g. --impl my_attention.py, or leave --impl out to check gradlab's reference")
    return impl


def check_checks(checks):
    """--checks as given: None (every check that applies), a comma-separated
    string or a list of names; a blank one names nothing."""
    if checks is None:
        return None
    if not isinstance(checks, str) and not (hasattr(checks, "__iter__") and all(isinstance(c, str) for c in checks)):
        raise refuse(f"checks={checks!r}", "must be check names: a comma-separated string or a list of strings",
                     "e.g. checks=['gradient', 'causality']")
    names = [c.strip() for c in checks.split(",")] if isinstance(checks, str) else [c.strip() for c in checks]
    names = [n for n in names if n]
    if not names:
        raise refuse(f"--checks {checks!r}", "names no check",
                     "e.g. --checks gradient,causality, or leave --checks out to run every check (gradlab list)")
    return names


def check_explore(n):
    return Rule(int, "configurations to draw", 20, low=1, high=10_000).check(
        f"--explore {shown(n)}", n, "e.g. --explore 20")


# ---- how much work a configuration costs -------------------------------------------
# Measured (benchmarks/, one core): the checks' cost is close to
#   (numbers one forward holds) x (forwards the checks make)
# at about 1e-7 s per number: probes along the batch and along time make B and T
# forwards each (batch_independence, causality); the rest about 20; overfit trains
# the reference LM (with the module swapped in) for 30 steps of forward and backward.
SECONDS_PER_NUMBER = 1e-7
MAX_SECONDS = 60.0
PROBE_CHECKS = {"batch_independence": "batch_size", "causality": "seq_len"}


def _arrays(kind, s):
    """(description, numbers) of the arrays one forward of `kind` holds, for sizes s."""
    B, T, D, H, F, V, M, L = (s[k] for k in SIZES)
    x = ("the input (batch_size, seq_len, d_model)", B * T * D)
    attention = [x, ("the attention scores (batch_size, num_heads, seq_len, seq_len)", B * H * T * T),
                 ("q, k, v (batch_size, seq_len, 3*d_model)", 3 * B * T * D),
                 ("qkv_weight (d_model, 3*d_model)", 3 * D * D)]
    ffn = [x, ("the hidden layer (batch_size, seq_len, d_ff)", B * T * F), ("w1 (d_model, d_ff)", D * F)]
    logits = ("the logits (batch_size, seq_len, vocab_size)", B * T * V)
    table = {
        "linear": [x, ("the output (batch_size, seq_len, d_ff)", B * T * F), ("weight (d_model, d_ff)", D * F)],
        "layernorm": [x, x],
        "ffn": ffn,
        "attention": attention,
        "embedding": [x, ("weight (vocab_size, d_model)", V * D)],
        "positional": [x, ("weight (max_len, d_model)", M * D)],
        "block": attention + ffn + [x, x],
        "softmax": [logits, logits],
        "cross_entropy": [logits, logits],
    }
    if kind == "lm":
        per_layer = attention + ffn + [x, x]
        return ([(f"n_layers x {what}", L * n) for what, n in per_layer]
                + [logits, ("token_embedding (vocab_size, d_model)", V * D),
                   ("pos_embedding (max_len, d_model)", M * D)])
    return table.get(kind, [])


def _overfit_arrays(kind, sizes):
    """The arrays of the LM the overfit check trains (with the student's module or optimizer in it)."""
    if kind == "lm":
        return []
    return [(f"the LM the overfit check trains your {kind} in: {what}", n) for what, n in _arrays("lm", sizes)]


def estimate(kind, sizes, checks):
    """(seconds, largest array as (what, numbers)) the checks `checks` (names)
    would take on `kind` at `sizes` (a dict of SIZES)."""
    arrays = _arrays(kind, sizes)
    numbers_held = sum(n for _, n in arrays)
    forwards = 20 + sum(sizes[field] for check, field in PROBE_CHECKS.items() if check in checks)
    work = numbers_held * forwards
    if "overfit" in checks:
        lm = _arrays("lm", sizes)
        work += sum(n for _, n in lm) * 60
        arrays = arrays + _overfit_arrays(kind, sizes)
    largest = max(arrays, key=lambda a: a[1], default=("nothing", 0))
    return float(min(work, 10**300)) * SECONDS_PER_NUMBER, largest


def check_sizes(kind, cfg, checks, changed):
    """Refuse sizes whose checks would take more than MAX_SECONDS, naming the
    size the user changed that is furthest over, and the largest value of it
    that fits with the other sizes as they are."""
    sizes = {k: getattr(cfg, k) for k in SIZES}
    seconds, (what, held) = estimate(kind, sizes, checks)
    if seconds <= MAX_SECONDS:
        return
    candidates = [k for k in SIZES if k in changed] or list(SIZES)
    fits = {k: _largest_fitting(kind, sizes, checks, k) for k in candidates}
    name = max(candidates, key=lambda k: sizes[k] / max(fits[k], 1))
    gb = float(min(held, 10**300)) * np.dtype(cfg.dtype).itemsize / 1e9
    memory = f"{what} would hold {float(min(held, 10**300)):.3g} numbers ({gb:.3g} GB in {cfg.dtype}) and " if gb >= 1 else ""
    raise refuse(f"{name}={shown(sizes[name])}", f"too large for {kind}: {memory}the checks would run for "
                 f"{_duration(seconds)} (gradlab refuses more than about {MAX_SECONDS:.0f} s; its checks "
                 "find bugs at small sizes)",
                 f"e.g. --set {name}={fits[name]}, the largest that fits with the other sizes as they are"
                 if fits[name] >= 1 else "lower the other sizes too")


def _largest_fitting(kind, sizes, checks, name):
    lo, hi = 0, sizes[name]
    while lo < hi:   # the largest value with the other sizes fixed (cost grows with every size)
        mid = (lo + hi + 1) // 2
        if estimate(kind, {**sizes, name: mid}, checks)[0] <= MAX_SECONDS:
            lo = mid
        else:
            hi = mid - 1
    if name == "d_model":
        lo -= lo % sizes["num_heads"]
    return lo


def _duration(seconds):
    if MAX_SECONDS < seconds < 1.05 * MAX_SECONDS:    # (not "about 60 s (gradlab refuses more than about 60 s)")
        return f"a little over {MAX_SECONDS:.0f} s"
    if seconds < 120:
        return f"about {seconds:.0f} s"
    if seconds < 7200:
        return f"about {seconds / 60:.0f} minutes"
    if seconds < 2 * 86400:
        return f"about {seconds / 3600:.0f} hours"
    return f"about {seconds / 86400:.3g} days"
