"""gradlab's checks as pytest tests (scikit-learn's `parametrize_with_checks` pattern).

    # test_my_modules.py
    from gradlab.frontends.testing import parametrize_with_checks

    @parametrize_with_checks("my_modules.py")
    def test_my_modules(kind, check):
        check()          # runs that gradlab check; fails with its message

One test per (kind, check) the file registers, with ids such as
`attention-gradient`. The same runs back the pytest plugin's items
(`pytest --gradlab-impl my_modules.py`); both use the session's seed, which
pytest prints in its header and `--gradlab-seed N` replays.

Precondition: every check but `smoke` first needs `smoke` to pass for that
kind (smoke is worked out once per kind and process, then remembered; a check
asked for alone runs ahead of it, and shows it when its own calls did: plan.py). When smoke
fails, its own test fails with the message and the kind's other tests are
*skipped* ("not judged: the 'smoke' precondition failed: ..."), as in
`gradlab check`, so one broken build is one failure, not twenty.
"""
import json
import os
from dataclasses import dataclass, field

from gradlab.contract import options
from gradlab.execution import loader
from gradlab.execution.plan import Plan, check_options, new_seed, refused_record
from gradlab.execution.runner import time_limit
from gradlab.contract.errors import UsageError
from gradlab.contract.kinds import get_kind
from gradlab.contract.records import ERROR, FAIL, SKIP, json_default
from gradlab.frontends.terminal import printable

__all__ = ["parametrize_with_checks", "CheckCase", "cases", "run_case", "session_seed"]

_session_seed = None     # set by the pytest plugin (the same on every xdist worker)
_implementations = {}    # impl key -> loader.Implementation, loaded once per process
_plans = {}              # (impl key, kind, seed, overrides) -> Plan
_last_record = None      # the record of the check that ran last; the plugin attaches it to the test report
_session_limits = None   # the worker's limits from the plugin's options (None: Limits()'s defaults)


def session_seed():
    """The seed every check of this pytest session uses: the plugin's (printed
    in pytest's header), or one fresh seed per process without the plugin."""
    global _session_seed
    if _session_seed is None:
        _session_seed = new_seed()
    return _session_seed


def set_session_limits(limits):
    """Set the limits of the workers this session starts (the plugin's --gradlab-timeout, ...; None: the
    defaults); returns the previous ones. A file already loaded keeps its worker's."""
    global _session_limits
    previous, _session_limits = _session_limits, limits
    return previous


def set_session_seed(seed):
    """Set the session's seed (None: choose afresh when next needed); returns the previous one."""
    global _session_seed
    previous, _session_seed = _session_seed, None if seed is None else int(seed)
    return previous


@dataclass(frozen=True)
class CheckCase:
    """One (kind, check) of one implementation. Calling it runs the check and
    passes, fails with the check's message, or skips with its reason."""
    impl: object
    kind: str
    check: str
    overrides: tuple = field(default=())     # ((field, value), ...)

    @property
    def id(self):
        return f"{self.kind}-{self.check}"

    def __repr__(self):
        return f"{self.kind}::{self.check}"

    def __call__(self, seed=None):
        import pytest
        record, seed = run_case(self, seed)
        if record.status == SKIP:
            pytest.skip(printable(record.message))
        if record.status in (FAIL, ERROR):
            pytest.fail(failure_text(self, record, seed), pytrace=False)
        return record


def cases(impl=None, kinds=None, checks=None, **overrides):
    """The CheckCases for `impl` (a path, a module name, a registered function,
    or None / "reference" for gradlab's own modules): every kind it registers
    (or those in `kinds`) x every check that applies (or those in `checks`), in
    a fixed order: kinds as in `gradlab list`, checks in run order.
    Raises UsageError when the implementation cannot be loaded."""
    check_options(impl, _names(checks), 0, overrides)   # before the file is imported
    p = Plan(impl, kinds=_names(kinds), checks=_names(checks), seed=0, overrides=overrides,
             loaded=implementation(impl))
    frozen = tuple(sorted(overrides.items()))
    return [CheckCase(impl, k, spec.name, frozen)
            for k in p.kind_list
            for spec in p.checks_for(k, precondition=p.wanted is None)
            if spec.applies(get_kind(k))]


def parametrize_with_checks(impl=None, kinds=None, checks=None, **overrides):
    """A `pytest.mark.parametrize("kind, check", ...)` decorator with one test
    per (kind, check) of `impl`; the test body calls `check()`. Keyword
    arguments override cfg fields (d_model=64). A file that cannot be loaded
    fails the test module's collection with gradlab's one-line message."""
    import pytest
    __tracebackhide__ = True   # the error points at the user's decorator line, not into gradlab
    try:
        found = cases(impl, kinds, checks, **overrides)
    except UsageError as e:
        raise pytest.UsageError(f"gradlab: {e}") from None
    return pytest.mark.parametrize(("kind", "check"), [pytest.param(c.kind, c, id=c.id) for c in found])


def implementation(impl):
    """Loaded once per process: a file or module name in a worker process of its
    own (kept for the session, stopped at exit), a Python object in this one."""
    key = (_key(impl), _session_limits)
    if key not in _implementations:
        _implementations[key] = loader.open_implementation(impl, limits=_session_limits)
    return _implementations[key]


def plan(case, seed):
    """The Plan a case runs in: one per (implementation, kind, seed, overrides) and
    process, so the kind's precondition runs once, however many of its checks run."""
    key = (_key(case.impl), _session_limits, case.kind, seed, case.overrides)
    if key not in _plans:
        # ahead=False: which check a process runs first is pytest-xdist's choice; run ahead of the precondition,
        # a check whose call ran past its limit kept an error of its own, so the records hung on the scheduling
        _plans[key] = Plan(case.impl, kinds=[case.kind], seed=seed, overrides=dict(case.overrides),
                           loaded=implementation(case.impl), ahead=False)
    return _plans[key]


def run_case(case, seed=None):
    """Run one CheckCase (after its kind's precondition); returns (CheckRecord, seed).
    Also leaves the full record for the pytest plugin to attach to the report."""
    global _last_record
    seed = session_seed() if seed is None else options.check_seed(seed, "seed")
    loaded = implementation(case.impl)
    refused = getattr(loaded, "refused", {})
    if case.kind in refused and case.kind not in loaded.registrations:     # (a misspelled kind: one line, no plan)
        record = refused_record(case.kind, case.check, refused[case.kind])
        _last_record = jsonable({"impl": loaded.name, "kind": case.kind, "seed": seed, "config": {},
                                 "record": record.to_dict()})
        return record, seed
    p = plan(case, seed)
    with time_limit(_session_limits.timeout if _session_limits is not None else None):   # (code run in-process)
        record = p.run_check(case.kind, case.check)
    _last_record = jsonable({"impl": p.loaded.name, "kind": case.kind, "seed": seed,
                             "config": p.config(case.kind).to_dict(), "record": record.to_dict()})
    return record, seed


def set_last_record(record):
    """For the pytest plugin's own items (a file that cannot be loaded)."""
    global _last_record
    _last_record = jsonable(record)


def pop_last_record():
    global _last_record
    record, _last_record = _last_record, None
    return record


def failure_text(case, record, seed):
    """What pytest shows for a failed check: the message, then how to replay it."""
    text = printable(record.message)   # names the kind, the tensor, the numbers; the student's text escaped
    command = replay_command(case, seed)
    return f"{text}\nreplay: {command}" if command else f"{text}\nseed: {seed}"


def replay_command(case, seed):
    """The command that runs the case again, or None where there is no run to replay (a kind whose
    registration does not count: the message says what to fix)."""
    try:
        return plan(case, seed).replay(case.kind, case.check)
    except UsageError:
        return None


def jsonable(value):
    """A copy made only of JSON types (NumPy scalars and arrays converted), so a
    record survives pytest-xdist's serialisation of test reports."""
    return json.loads(json.dumps(value, default=json_default))


def _key(impl):
    if impl is None or impl == loader.REFERENCE:
        return loader.REFERENCE
    if isinstance(impl, (str, os.PathLike)):
        text = os.fspath(impl)
        return os.path.abspath(text) if os.path.exists(text) else text
    return impl


def _names(value):
    if value is None:
        return None
    if isinstance(value, str):
        value = [value]
    return [n.strip() for v in value for n in str(v).split(",") if n.strip()] or None
