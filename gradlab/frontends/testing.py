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
kind (smoke runs once per kind and process, then is remembered). When smoke
fails, its own test fails with the message and the kind's other tests are
*skipped* ("not run: the 'smoke' precondition failed: ..."), as in
`gradlab check`, so one broken build is one failure, not twenty.
"""
import json
import os
import shlex
from dataclasses import dataclass, field

from gradlab.execution import loader
from gradlab.execution import runner
from gradlab.contract import suite
from gradlab.contract.errors import UsageError
from gradlab.contract.kinds import KINDS, get_kind
from gradlab.contract.records import ERROR, FAIL, SKIP, CheckRecord
from gradlab.execution.subject import Subject

__all__ = ["parametrize_with_checks", "CheckCase", "cases", "run_case", "session_seed"]

_session_seed = None     # set by the pytest plugin (the same on every xdist worker)
_implementations = {}    # impl key -> loader.Implementation, loaded once per process
_smoke = {}              # (impl key, kind, seed, overrides) -> smoke CheckRecord
_last_record = None      # the record of the check that ran last; the plugin attaches it to the test report


def session_seed():
    """The seed every check of this pytest session uses: the plugin's (printed
    in pytest's header), or one fresh seed per process without the plugin."""
    global _session_seed
    if _session_seed is None:
        _session_seed = runner.new_seed()
    return _session_seed


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
            pytest.skip(record.message)
        if record.status in (FAIL, ERROR):
            pytest.fail(failure_text(self, record, seed), pytrace=False)
        return record


def cases(impl=None, kinds=None, checks=None, **overrides):
    """The CheckCases for `impl` (a path, a module name, a registered function,
    or None / "reference" for gradlab's own modules): every kind it registers
    (or those in `kinds`) x every check that applies (or those in `checks`), in
    a fixed order: kinds as in `gradlab list`, checks in run order.
    Raises UsageError when the implementation cannot be loaded."""
    loaded = implementation(impl)
    kinds = _names(kinds)
    checks = _names(checks)
    for k in kinds or ():
        get_kind(k)
    wanted = {c.name for c in suite.resolve(checks)} if checks else None
    registered = [k for k in KINDS if k in loaded.registrations]
    if kinds:
        bare_function = callable(impl) and not loaded.registrations   # it implements whichever kind is asked
        for k in kinds:
            if not bare_function:
                loaded.get(k)    # a UsageError that names what the file does register
        registered = [k for k in KINDS if k in kinds]
    frozen = tuple(sorted(overrides.items()))
    out = []
    for k in registered:
        for spec in suite.applicable(get_kind(k)):
            if wanted is None or spec.name in wanted:
                out.append(CheckCase(impl, k, spec.name, frozen))
    return out


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
    key = _key(impl)
    if key not in _implementations:
        _implementations[key] = loader.load(impl)
    return _implementations[key]


def run_case(case, seed=None):
    """Run one CheckCase (after its kind's precondition); returns (CheckRecord, seed).
    Also leaves the full record for the pytest plugin to attach to the report."""
    global _last_record
    seed = session_seed() if seed is None else int(seed)
    loaded = implementation(case.impl)
    spec = get_kind(case.kind)
    overrides = dict(case.overrides)
    cfg = runner.config_for(case.kind, seed, **overrides)
    if callable(case.impl) and not loaded.registrations:
        registration = loader.registration_for(case.impl, case.kind)[1]
    else:
        registration = loaded.get(case.kind)
    check_spec = suite.resolve([case.check])[0]
    if not check_spec.applies(spec):
        record = CheckRecord(case.check, SKIP, f"does not apply to {case.kind} ({check_spec.summary})")
    else:
        smoke_key = (_key(case.impl), case.kind, seed, case.overrides)
        smoke = _smoke.get(smoke_key)
        if smoke is None:
            smoke_spec = suite.resolve([runner.PRECONDITION])[0]
            smoke = runner.run_one(smoke_spec, Subject(spec, registration, cfg, loaded.name, loaded.files), seed)
            _smoke[smoke_key] = smoke
        if case.check == runner.PRECONDITION:
            record = smoke
        elif not smoke.ok:
            first = smoke.message.splitlines()[0] if smoke.message else smoke.status
            record = CheckRecord(case.check, SKIP,
                                 f"not run: the {runner.PRECONDITION!r} precondition failed ({first})")
        else:
            record = runner.run_one(check_spec, Subject(spec, registration, cfg, loaded.name, loaded.files), seed)
    _last_record = jsonable({"impl": loaded.name, "kind": case.kind, "seed": seed, "config": cfg.to_dict(),
                             "record": record.to_dict()})
    return record, seed


def pop_last_record():
    global _last_record
    record, _last_record = _last_record, None
    return record


def failure_text(case, record, seed):
    """What pytest shows for a failed check: the message, then how to replay it."""
    text = record.message   # already names the kind, the tensor, the numbers
    command = replay_command(case, seed)
    return f"{text}\nreplay: {command}" if command else f"{text}\nseed: {seed}"


def replay_command(case, seed):
    if callable(case.impl):
        return None
    words = ["gradlab", "check", case.kind]
    if case.impl is not None and case.impl != loader.REFERENCE:
        words += ["--impl", os.fspath(case.impl)]
    words += ["--checks", case.check, "--seed", str(seed)]
    for name, value in case.overrides:
        words += ["--set", f"{name}={value}"]
    return shlex.join(words)


def jsonable(value):
    """A copy made only of JSON types (NumPy scalars and arrays converted), so a
    record survives pytest-xdist's serialisation of test reports."""
    return json.loads(json.dumps(value, default=_convert))


def _convert(value):
    if hasattr(value, "tolist"):
        return value.tolist()
    if hasattr(value, "item"):
        return value.item()
    if isinstance(value, (set, frozenset, tuple)):
        return list(value)
    return str(value)


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
