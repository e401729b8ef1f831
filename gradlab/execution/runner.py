"""`gradlab.check`: load an implementation, build each kind's cfg, run the
applicable checks in order and record what each found. The CLI, the pytest
plugin and the report are thin layers over this."""
import time
import traceback
import warnings
import zlib

import numpy as np

from gradlab.execution import harness
from gradlab.contract import suite
from gradlab.contract.config import Config, make_config
from gradlab.contract.errors import CheckFailure, CheckSkipped, StudentError, UsageError
from gradlab.contract.kinds import KINDS, get_kind
from gradlab.execution.loader import load, registration_for
from gradlab.contract.records import ERROR, FAIL, PASS, SKIP, CheckRecord, KindResult, RunResult
from gradlab.execution.subject import Subject

PRECONDITION = "smoke"


def new_seed():
    """A fresh seed for each run; recorded in the result so a failure can be replayed with --seed."""
    return int(np.random.SeedSequence().entropy % (2**31))


def check(kind, impl=None, checks=None, seed=None, timeout=None, on_record=None, **overrides):
    """Check one kind, or "all" the kinds `impl` registers. Returns a KindResult
    (or a RunResult for "all"). Raises UsageError when the run cannot start."""
    seed = new_seed() if seed is None else int(seed)
    if isinstance(checks, str):
        checks = [c.strip() for c in checks.split(",") if c.strip()]
    wanted = suite.resolve(checks) if checks else None
    previous_timeout = harness.get_timeout()
    harness.install_alarm_handler()   # once per run: something may have replaced it since the last
    if timeout is not None:
        harness.set_timeout(timeout)
    try:
        return _check(kind, impl, wanted, seed, overrides, on_record)
    finally:
        harness.set_timeout(previous_timeout)   # a timeout given to one run must not stick to the next


def _check(kind, impl, wanted, seed, overrides, on_record):
    if kind == "all":
        loaded = load(impl)   # once: a student's file is imported (executed) a single time per run
        kinds = [k for k in KINDS if k in loaded.registrations]
        if not kinds:
            raise UsageError(f"{loaded.name} registers no kind gradlab knows")
        return RunResult([_run_kind(k, loaded, loaded.get(k), wanted, seed, overrides, on_record)
                          for k in kinds])
    get_kind(kind)
    loaded, registration = registration_for(impl, kind)
    return _run_kind(kind, loaded, registration, wanted, seed, overrides, on_record)


def config_for(kind, seed=0, **overrides):
    """The cfg a kind is checked with: the kind's defaults, then the user's overrides."""
    spec = get_kind(kind)
    base = make_config(Config(), **spec.cfg_defaults)
    return make_config(base, **overrides, seed=seed)


def _run_kind(kind, loaded, registration, wanted, seed, overrides, on_record):
    spec = get_kind(kind)
    cfg = config_for(kind, seed, **overrides)
    subject = Subject(spec, registration, cfg, loaded.name, loaded.files)
    result = KindResult(kind, loaded.name, seed, cfg.to_dict())
    applicable = suite.applicable(spec)
    selected = wanted if wanted is not None else applicable
    if wanted is not None and PRECONDITION not in [c.name for c in wanted]:
        selected = [c for c in applicable if c.name == PRECONDITION] + list(wanted)
    blocked = None
    for check_spec in selected:
        if not check_spec.applies(spec):
            record = CheckRecord(check_spec.name, SKIP, f"does not apply to {kind} ({check_spec.summary})")
        elif blocked:
            record = CheckRecord(check_spec.name, SKIP, f"not run: {blocked}")
        else:
            record = run_one(check_spec, subject, seed)
            if check_spec.name == PRECONDITION and not record.ok:
                blocked = f"the {PRECONDITION!r} precondition failed, so later checks would only repeat it"
        result.checks.append(record)
        if on_record:
            on_record(result, record)
    return result


def rng_for(seed, check_name):
    """Each check's own stream: running it alone replays what it saw in a full run."""
    return np.random.default_rng([seed, zlib.crc32(check_name.encode())])


def run_one(check_spec, subject, seed):
    start = time.perf_counter()
    try:
        with warnings.catch_warnings(), np.errstate(all="ignore"):
            warnings.simplefilter("ignore")
            outcome = check_spec.fn(subject, rng_for(seed, check_spec.name))
        record = CheckRecord(check_spec.name, PASS, outcome.message, outcome.metrics, outcome.details)
    except CheckFailure as f:
        record = CheckRecord(check_spec.name, FAIL, str(f), f.metrics, f.details)
    except CheckSkipped as s:
        record = CheckRecord(check_spec.name, SKIP, str(s))
    except StudentError as e:
        trace = harness.student_traceback(e.__cause__)   # shown by `gradlab check -v`
        record = CheckRecord(check_spec.name, ERROR, f"{subject.kind.name}: {e}",
                             details={"traceback": trace} if trace else {})
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
