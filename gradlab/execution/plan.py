"""The plan of a run, worked out once for every front end.

`gradlab check`, `gradlab.check`, the pytest plugin, `parametrize_with_checks`
and `gradlab grade` all ask a Plan the same questions:

- which kinds (those asked for, or every kind the implementation registers),
- which checks for each kind, in run order (the precondition first),
- what a check that is not run says instead (does not apply; the precondition failed),
- how to replay a run or one check from the command line,

and they run checks through it, so a check gives the same record whichever
front end ran it. The precondition (`smoke`) is worked out at most once per
kind and plan; every later check of that kind is skipped with its reason when
it failed. The first check after it runs first: when that check passes and
its own calls showed what the precondition asks (smoke's `shown_by`), the
precondition is not run again (a module's build, forward and backward saved:
a quarter of a one-check run's time); otherwise it runs, and when it fails the
first check's record is set aside as the others are. Each check builds its own
module from its own random stream either way, so its verdict does not depend
on whether the precondition ran before it.
"""
import functools
import os
import shlex
import time
import traceback
import warnings
import zlib
from dataclasses import dataclass

import numpy as np

from gradlab.contract import options, suite
from gradlab.contract.config import make_config
from gradlab.contract.errors import CheckFailure, CheckSkipped, StudentError, UsageError
from gradlab.contract.kinds import KINDS, get_kind
from gradlab.contract.records import ERROR, FAIL, PASS, PRECONDITION, SKIP, CheckRecord, KindResult
from gradlab.contract.registry import Registration
from gradlab.execution import harness, loader
from gradlab.execution.subject import History, Subject



def new_seed():
    """A fresh seed for each run; recorded in the result so a failure can be replayed with --seed."""
    return int(np.random.SeedSequence().entropy % (2**31))


def config_for(kind, seed=0, **overrides):
    """The cfg a kind is checked with: the kind's defaults, then the user's overrides."""
    spec = get_kind(kind)
    base = make_config(**spec.cfg_defaults)
    return make_config(base, **overrides, seed=seed)


def rng_for(seed, check_name):
    """Each check's own stream: running it alone replays what it saw in a full run."""
    generator = np.random.PCG64(0)
    generator.state = _first_state(seed, check_name)
    return np.random.Generator(generator)


def global_seed(seed, check_name):
    """The seed of the global generators (np.random's, random's) while a check runs (Subject.global_seeds):
    its own, so a check run alone sees what it saw in a full run."""
    return (seed * 1_000_003 + zlib.crc32(check_name.encode())) % 2**32


@functools.lru_cache(maxsize=512)
def _first_state(seed, check_name):
    """The state np.random.default_rng([seed, crc32(name)]) starts in (hashing the seed is most of the cost
    of a new generator, and each check of each run makes one)."""
    return np.random.default_rng([seed, zlib.crc32(check_name.encode())]).bit_generator.state


def check_names(checks):
    """--checks "a,b" / ["a", "b"] / None -> validated CheckSpecs in run order, or None for all."""
    if isinstance(checks, str):
        checks = [c.strip() for c in checks.split(",") if c.strip()]
    return suite.resolve(checks) if checks else None


def kind_names(kinds):
    """--kinds "a,b" / ["a", "b,c"] / None -> validated kind names, or None for every registered kind."""
    if kinds is None:
        return None
    if isinstance(kinds, str):
        kinds = [kinds]
    names = [k.strip() for value in kinds for k in str(value).split(",") if k.strip()]
    shown = ",".join(str(value) for value in kinds)
    if not names:       # '' or ',' is a slip, not "every kind": that is asked for as "all"
        raise options.refuse(f"kind {shown!r}", "names no kind", "give one, e.g. attention, or all "
                             "(`gradlab list` shows them)")
    if "all" in names and len(names) > 1:
        raise options.refuse(f"kind {shown!r}", "'all' already means every kind the file registers",
                             "give all alone, or the kinds you want")
    for name in names:
        get_kind(name)
    return names


def check_options(impl, checks, seed, overrides):
    """The options of a run, each against its rule (gradlab/contract/options.py),
    before the implementation is imported: a UsageError naming the first bad one.
    Returns the seed (None: a fresh one is drawn)."""
    options.check_impl(impl)
    options.check_checks(checks)
    if "seed" in (overrides or {}):
        raise options.refuse(f"seed={overrides['seed']}", "the seed is not a cfg field to set",
                             f"use --seed {overrides['seed']} (gradlab.check(..., seed=N))")
    make_config(**(overrides or {}))
    return options.check_seed(seed)


@dataclass
class Plan:
    """One implementation, the kinds and checks to run on it, one seed and cfg overrides.

    impl: a file path, a module name, a registered function or factory, or None
    (gradlab's reference). kinds: None (every kind impl registers), "all", a
    name, or a list / comma list. checks: None (every applicable check) or names.
    """
    impl: object = None
    kinds: object = None
    checks: object = None
    seed: int = None
    overrides: dict = None
    loaded: object = None      # impl already loaded (loader.Implementation), to import a file once per process
    isolate: object = None     # run the student's code in a worker process (None: yes for files and module names)
    limits: object = None      # the worker's Limits (None: the defaults)
    workers: int = 1           # kinds run at once, each through a worker of its own (None: one per core; lanes.py)
    ahead: bool = True         # the first check after the precondition may run ahead of it (see precondition)

    def __post_init__(self):
        # every option is checked (gradlab/contract/options.py) before the file is imported or anything runs
        self.seed = check_options(self.impl, self.checks, self.seed, self.overrides)
        self.seed = new_seed() if self.seed is None else self.seed
        self.overrides = dict(self.overrides or {})
        self.wanted = check_names(self.checks)
        asked = None if self.kinds in (None, "all") else kind_names(self.kinds)
        self._configs = {}
        if asked is not None:
            self._check_kinds(asked)     # sizes too, before the file is imported (all: once its kinds are known)
        self._opened = self.loaded is None           # this plan started it (a worker): close() stops it
        self.loaded = self.loaded or loader.open_implementation(self.impl, self.isolate, self.limits)
        try:
            self.bare = callable(self.impl) and not self.loaded.registrations   # implements whichever kind is asked
            # kinds the file registers whose registration does not count (loader._refuse_references): in a run of
            # every kind, each is an error record saying why, not left out without a word
            own = getattr(self.loaded, "refused_own", ())
            self.refused = {k: self.loaded.refused[k] for k in own} if asked is None else {}
            if asked is None:
                # (every kind in float16: the kinds float16 checks; a function or optimizer kind asked by name is
                # skipped with the reason, and judges nothing)
                self.kind_list = [k for k in KINDS if (k in self.loaded.registrations or k in self.refused)
                                  and (self.config(k).dtype != "float16" or KINDS[k].in_float16)]
                known = [k for k in KINDS if k in self.loaded.registrations]
                if not self.kind_list and known:
                    raise UsageError(f"--dtype float16 checks module kinds (and mixed_precision); {self.loaded.name} "
                                     f"registers only {', '.join(known)}, checked in float32 or float64: leave out "
                                     "--dtype float16, or name the kind to see each check's reason")
                if not self.kind_list:
                    refused = getattr(self.loaded, "refused", None)
                    raise UsageError(next(iter(refused.values())) if refused else
                                     f"{self.loaded.name} registers no kind gradlab knows")
            else:
                for kind in asked:
                    self.registration(kind)      # a UsageError naming what the file does register
                self.kind_list = [k for k in KINDS if k in asked]
            self._histories = {}      # kind -> what its checks saw so far (Subject.history)
            self._preconditions = {}
            self._ahead = {}          # (kind, check name) -> the record of a check run before its precondition
            self._check_applies()
            if asked is None:
                self._check_kinds(self.kind_list)   # every kind's sizes, before any kind runs
        except BaseException:         # a refused kind or size: the worker started for it is stopped now
            self.close()
            raise

    def _check_applies(self):
        """Checks asked for of which none applies to any kind of the run judge nothing: a usage error (exit 2),
        as in a rubric. (`check attention --checks trajectory` ran smoke alone and exited 0.) One that applies
        to some of them, or beside one that does, is skipped where it does not (check all --checks gradient)."""
        if self.wanted is None or not self.kind_list:
            return
        specs = [get_kind(k) for k in self.kind_list]
        if any(c.applies(k) for c in self.wanted for k in specs):
            return
        names = ", ".join(c.name for c in self.wanted)
        where = "; ".join(f"{c.name} checks {', '.join(k for k in KINDS if c.applies(KINDS[k])) or 'no kind'}"
                          for c in self.wanted)
        kinds = ", ".join(self.kind_list) if len(self.kind_list) <= 4 else f"any of the {len(self.kind_list)} kinds"
        raise UsageError(f"--checks {names}: {'does' if len(self.wanted) == 1 else 'do'} not apply to {kinds}, so "
                         f"nothing would be judged ({where}); see `gradlab list`")

    def _check_kinds(self, kinds):
        """The options that depend on the kind: eps in float16 (where float16 checks the kind), and the sizes
        (what the chosen checks would cost)."""
        for kind in kinds:
            cfg = self.config(kind)
            options.check_for_kind(get_kind(kind), cfg)
            options.check_sizes(kind, cfg, [c.name for c in self.checks_for(kind)], set(self.overrides))

    def close(self):
        """Stop the worker this plan started (and whatever it left running); nothing when in-process."""
        if self._opened:
            self.loaded.close()

    # ---- what will run ---------------------------------------------------------
    def registration(self, kind):
        if self.bare:
            return Registration(kind, self.impl, None, getattr(self.impl, "__qualname__", "?"))
        return self.loaded.get(kind)

    def config(self, kind):
        if kind not in self._configs:
            self._configs[kind] = config_for(kind, self.seed, **self.overrides)
        return self._configs[kind]

    def checks_for(self, kind, precondition=True):
        """The CheckSpecs run for `kind`, in order: the precondition first (when it
        applies and `precondition`), then the checks asked for (or all that apply).
        A check asked for that does not apply is kept: it is reported as skipped."""
        applicable = suite.applicable(get_kind(kind))
        chosen = self.wanted if self.wanted is not None else applicable
        first = [c for c in applicable if c.name == PRECONDITION and precondition]
        return first + [c for c in chosen if c.name != PRECONDITION or not first]

    def subject(self, kind):
        return Subject(get_kind(kind), self.registration(kind), self.config(kind), self.loaded.name,
                       self.loaded.files, self._histories.setdefault(kind, History()))

    # ---- running -----------------------------------------------------------------
    def precondition(self, kind, first=None):
        """The precondition's record for `kind`, worked out once per plan. first: the check (a CheckSpec)
        that runs next, which then runs now, ahead of it (its record kept for run_check): when it passes
        and its calls showed what the precondition asks, the precondition is not run itself."""
        if kind not in self._preconditions:
            spec = suite.resolve([PRECONDITION])[0]
            if self.ahead and first is not None and first.name != PRECONDITION and first.applies(get_kind(kind)) \
                    and spec.shown_by is not None:
                subject = self.subject(kind)
                ahead = self._ahead[(kind, first.name)] = run_one(first, subject, self.seed)
                if ahead.status == ERROR and ahead.details.get("over_time"):
                    # a call ran past its time limit: smoke makes the same calls and would wait for it again
                    self._preconditions[kind] = CheckRecord(
                        PRECONDITION, ERROR, f"{ahead.message} (in the {first.name!r} check, which ran first; "
                        "smoke makes the same calls, so it was not run to meet the limit again)")
                    return self._preconditions[kind]
                outcome = spec.shown_by(subject) if ahead.status == PASS else None
                if outcome is not None:
                    self._preconditions[kind] = CheckRecord(
                        PRECONDITION, PASS, f"{outcome.message} (shown by the {first.name!r} check's own calls)",
                        outcome.metrics, outcome.details)
                    return self._preconditions[kind]
            self._preconditions[kind] = run_one(spec, self.subject(kind), self.seed)
        return self._preconditions[kind]

    def run_check(self, kind, check):
        """One check (a name or CheckSpec) of `kind`, after its precondition: a CheckRecord."""
        spec = suite.resolve([check])[0] if isinstance(check, str) else check
        kind_spec = get_kind(kind)
        if not spec.applies(kind_spec):
            return CheckRecord(spec.name, SKIP, f"does not apply to {kind} ({spec.summary})", {"applies": False})
        if not any(c.name == PRECONDITION for c in suite.applicable(kind_spec)):
            return run_one(spec, self.subject(kind), self.seed)
        before = self.precondition(kind, spec)
        if spec.name == PRECONDITION:
            return before
        ahead = self._ahead.pop((kind, spec.name), None)
        if ahead is not None and ahead.details.get("over_time"):
            return ahead          # it ran, and its own call ran past the limit: the precondition took its word
        if not before.ok:
            first = before.message.split("\n")[0] if before.message else before.status
            return CheckRecord(spec.name, SKIP, f"not judged: the {PRECONDITION!r} precondition failed ({first})")
        return ahead or run_one(spec, self.subject(kind), self.seed)

    def result(self, kind):
        """An empty KindResult of `kind` in this plan (its records come as the checks run)."""
        return KindResult(kind, self.loaded.name, self.seed, self.config(kind).to_dict())

    def run_kind(self, kind, on_record=None):
        """Every planned check of `kind`: a KindResult (on_record(result, record) after each)."""
        result = self.result(kind)
        if kind in self.refused:
            result.checks.append(refused_record(kind, PRECONDITION, self.refused[kind]))
            if on_record:
                on_record(result, result.checks[-1])
            return result
        specs = self.checks_for(kind)
        for i, spec in enumerate(specs):
            if spec.name == PRECONDITION and i + 1 < len(specs):
                self.precondition(kind, specs[i + 1])      # the next check may show it (see precondition)
            record = self.run_check(kind, spec)
            result.checks.append(record)
            if on_record:
                on_record(result, record)
        return result

    # ---- replaying -----------------------------------------------------------------
    def replay(self, kind=None, check=None):
        """The `gradlab check` command that replays this run (one kind, one check), or
        None when the implementation is a Python object with no name on the command line."""
        if callable(self.impl):
            return None
        words = ["gradlab", "check", kind or ("all" if self.kinds in (None, "all") else ",".join(self.kind_list))]
        if self.impl is not None and self.impl != loader.REFERENCE:
            words += ["--impl", os.fspath(self.impl)]
        names = [check] if check else [c.name for c in self.wanted] if self.wanted is not None else []
        if names:
            words += ["--checks", ",".join(names)]
        for name, value in self.overrides.items():
            words += ["--dtype", str(value)] if name == "dtype" else ["--set", f"{name}={value}"]
        if self.isolate is not None:
            words += ["--isolate" if self.isolate else "--in-process"]
        return shlex.join(words + ["--seed", str(self.seed)])


def run_one(check_spec, subject, seed):
    """Run one check on a Subject: its record, whatever happened (a student's error,
    a check that could not judge, a bug in gradlab itself, each said as such)."""
    start = time.perf_counter()
    try:
        with warnings.catch_warnings(), np.errstate(all="ignore"), \
                subject.global_seeds(global_seed(seed, check_spec.name)):
            warnings.simplefilter("ignore")
            outcome = check_spec.fn(subject, rng_for(seed, check_spec.name))
        record = CheckRecord(check_spec.name, PASS, outcome.message, outcome.metrics, outcome.details)
    except CheckFailure as f:
        record = CheckRecord(check_spec.name, FAIL, str(f), f.metrics, f.details)
    except CheckSkipped as s:
        record = CheckRecord(check_spec.name, SKIP, str(s))
    except StudentError as e:
        trace = harness.student_traceback(e.__cause__)   # shown by `gradlab check -v`
        details = {"traceback": trace} if trace else {}
        if getattr(e, "over_time", False):
            details["over_time"] = True       # (the precondition does not wait for the same limit again)
        record = CheckRecord(check_spec.name, ERROR, f"{subject.kind.name}: {e}", details=details)
    except UsageError:
        raise
    except Exception as e:  # a bug in gradlab itself: say so rather than blame the student
        where = harness.student_frame(e)
        record = CheckRecord(check_spec.name, ERROR,
                             f"internal error in gradlab's {check_spec.name!r} check: {type(e).__name__}: {e}"
                             + (f" (at {where})" if where else "") + "; please report it",
                             details={"traceback": "".join(traceback.format_exception(e)).rstrip()})
    record.seconds = time.perf_counter() - start
    return record


def refused_record(kind, check, why):
    """The record of `check` for a kind whose registration does not count (a misspelled kind, gradlab's own
    reference; loader's `refused`): an error for the precondition, saying why; the other checks not judged."""
    said = f"{kind}: not checked: {why}"
    return CheckRecord(check, ERROR, said) if check == PRECONDITION else \
        CheckRecord(check, SKIP, f"not judged: the {PRECONDITION!r} precondition failed ({said})")
