"""The pytest plugin (registered through the `pytest11` entry point as "gradlab").

    pytest -n auto --gradlab-impl my_modules.py --gradlab-report report.html

One test item per (kind, check) the file registers, with ids such as
`attention::gradient` (prefixed by the file's name when several --gradlab-impl
are given), in a fixed order so that every xdist worker collects the same
items. A failed item shows the check's message and the command that replays
it, not a traceback through gradlab. A file that cannot be loaded is a
collection error with gradlab's one-line message.

The seed: --gradlab-seed N, or one fresh seed per session chosen on the
controller, printed in pytest's header and handed to every xdist worker.

The report: each check's full record (a JSON-able dict) rides on its test
report as the attribute `gradlab_record`, which pytest-xdist serialises with
the report's other attributes; the controller collects the records in
pytest_runtest_logreport and writes the HTML report once, at session end.

Nothing judged is no pass: when every gradlab item of a kind that ran was
skipped (a forward-only module run with -k gradient), the session fails
(exit status 1, as `gradlab check` exits) and the summary says which kind.
Tests written with gradlab.frontends.testing.parametrize_with_checks land in the same
report.
"""
import os
import shlex

import pytest

from gradlab.contract import options
from gradlab.frontends import testing
from gradlab.frontends.terminal import printable
from gradlab.contract.errors import UsageError

RECORD_ATTR = "gradlab_record"


def pytest_addoption(parser):
    group = parser.getgroup("gradlab", "gradlab: verify hand-written NumPy modules")
    group.addoption("--gradlab-impl", action="append", default=[], metavar="PATH",
                    help="a .py file (or module name) that registers modules with gradlab.register; "
                         "one test per (kind, check). Repeatable; 'reference' means gradlab's own modules.")
    group.addoption("--gradlab-kind", action="append", default=[], metavar="KIND",
                    help="only these kinds (repeatable, or comma-separated: attention,layernorm)")
    group.addoption("--gradlab-report", metavar="PATH",
                    help="write one self-contained HTML report of every gradlab check that ran")
    group.addoption("--gradlab-seed", type=int, metavar="N",
                    help="seed for every check (default: a fresh one per session, printed in the header)")
    from gradlab.execution import limits
    group.addoption("--gradlab-timeout", type=float, metavar="SECONDS",
                    help=f"limit for one call into the checked code (default {limits.DEFAULT_TIMEOUT:g}; 0: none)")
    group.addoption("--gradlab-wall-time", type=float, metavar="SECONDS",
                    help=f"limit for all the calls into one file's code, per pytest process (default "
                         f"{limits.DEFAULT_WALL:g}; 0: none)")
    group.addoption("--gradlab-max-memory", type=float, metavar="MB",
                    help=f"address space of the process running a file's code (default {limits.DEFAULT_MEMORY_MB};"
                         " 0: none)")
    group.addoption("--gradlab-max-output", type=float, metavar="MB",
                    help=f"what a file's code may print (default {limits.DEFAULT_OUTPUT_MB:g}; 0: none)")


def pytest_configure(config):
    config.addinivalue_line("markers", "gradlab: a gradlab check item (kind::check)")
    if config.getoption("gradlab_kind") and not config.getoption("gradlab_impl"):
        raise pytest.UsageError("--gradlab-kind needs --gradlab-impl PATH (the file to check; "
                                "--gradlab-impl reference checks gradlab's own modules)")
    workerinput = getattr(config, "workerinput", None)
    try:   # options are checked before anything is collected or run, as the CLI does
        options.check_seed(config.getoption("gradlab_seed"), "--gradlab-seed")
        worker_limits = _limits(config)
        if config.getoption("gradlab_report") is not None and workerinput is None:
            options.check_output_path("--gradlab-report", config.getoption("gradlab_report"), "report.html")
    except UsageError as e:
        raise pytest.UsageError(f"gradlab: {e}") from None
    if workerinput is not None and "gradlab_seed" in workerinput:
        seed = workerinput["gradlab_seed"]        # an xdist worker: the controller's seed
    elif config.getoption("gradlab_seed") is not None:
        seed = config.getoption("gradlab_seed")
    else:
        from gradlab.execution.runner import new_seed
        seed = new_seed()
    previous = testing.set_session_seed(seed), testing.set_session_limits(worker_limits)
    config.pluginmanager.register(GradlabSession(config, seed, previous), "gradlab-session")


def _limits(config):
    """The workers' Limits from --gradlab-timeout, --gradlab-wall-time, --gradlab-max-memory and
    --gradlab-max-output (each refused as the CLI refuses its own), or None when none is given."""
    from gradlab.execution.limits import Limits
    given = {field: config.getoption(f"gradlab_{name.replace('-', '_')}") for name, field in (
        ("timeout", "timeout"), ("wall-time", "wall"), ("max-memory", "memory_mb"), ("max-output", "output_mb"))}
    if all(v is None for v in given.values()):
        return None
    if given["timeout"] is not None:
        given["timeout"] = options.check_timeout(given["timeout"], "--gradlab-timeout")
    for name, field in (("wall-time", "wall"), ("max-memory", "memory_mb"), ("max-output", "output_mb")):
        if given[field] is not None:
            given[field] = options.check_limit(f"--gradlab-{name}", given[field])
    return Limits(**{field: value for field, value in given.items() if value is not None})


class GradlabSession:
    def __init__(self, config, seed, previous=(None, None)):
        self.config = config
        self.seed = seed
        self.previous = previous   # (seed, limits), restored at the end (pytester runs sessions inside sessions)
        self.impls = config.getoption("gradlab_impl")
        self.kinds = [k.strip() for v in config.getoption("gradlab_kind") for k in v.split(",") if k.strip()]
        self.report_path = config.getoption("gradlab_report")
        self.is_worker = hasattr(config, "workerinput")
        self.records = []
        self.written = None
        self.unjudged = []      # the KindResults in which every check that ran was skipped

    # ---- the seed, shared with xdist workers ---------------------------------
    def pytest_report_header(self, config):
        lines = [f"gradlab: seed {self.seed} (replay with --gradlab-seed {self.seed})"]
        if self.impls:
            lines.append(f"gradlab: checking {', '.join(self.impls)}")
        return lines

    @pytest.hookimpl(optionalhook=True)
    def pytest_configure_node(self, node):
        node.workerinput["gradlab_seed"] = self.seed

    # ---- collection: one item per (impl, kind, check) --------------------------
    @pytest.hookimpl(tryfirst=True)   # before -k / -m deselection, which must see our items
    def pytest_collection_modifyitems(self, session, config, items):
        labels = _labels(self.impls)
        for impl, label in zip(self.impls, labels):
            collector = GradlabImpl.from_parent(session, name=label, nodeid=label, impl=impl,
                                                kinds=self.kinds, prefix=f"{label}::" if len(labels) > 1 else "")
            # what pytest does for each collector (its runner.collect_one_node)
            collector.ihook.pytest_collectstart(collector=collector)
            report = collector.ihook.pytest_make_collect_report(collector=collector)
            report.__dict__.pop("call", None)   # not serialisable; xdist sends the report to the controller
            session.ihook.pytest_collectreport(report=report)
            if report.passed:
                for item in report.result:
                    session.ihook.pytest_itemcollected(item=item)
                    items.append(item)

    # ---- records: attached on the worker, collected on the controller ----------
    @pytest.hookimpl(wrapper=True)
    def pytest_runtest_makereport(self, item, call):
        report = yield
        if call.when == "call":
            record = testing.pop_last_record()
            if record is not None:
                setattr(report, RECORD_ATTR, record)
        return report

    def pytest_runtest_logreport(self, report):
        record = getattr(report, RECORD_ATTR, None)
        if record is not None and report.when == "call":
            self.records.append(record)

    def pytest_sessionfinish(self, session):
        if self.is_worker:
            return
        results = assemble(self.records, self.impls)
        self.unjudged = [r for r in results if r.nothing_judged]
        if self.unjudged and session.exitstatus == pytest.ExitCode.OK:
            session.exitstatus = pytest.ExitCode.TESTS_FAILED     # skipped is not passed (CONTRACT §4's "passed")
        if self.report_path is not None:
            from gradlab.frontends.report import write_report
            write_report(results, self.report_path, replay=self.replay(), title=None)
            self.written = (self.report_path, sum(len(r.checks) for r in results))

    def pytest_unconfigure(self, config):
        testing.set_session_seed(self.previous[0])
        testing.set_session_limits(self.previous[1])

    def pytest_terminal_summary(self, terminalreporter):
        for r in self.unjudged:
            terminalreporter.write_line(
                f"gradlab: nothing was judged for {r.kind} ({r.impl}): every check that ran was skipped "
                f"({len(r.checks)} skipped), so it has not passed; exit status 1", red=True)
        if self.written:
            path, n = self.written
            terminalreporter.write_line(f"gradlab: report of {n} checks written to {path}")

    def replay(self):
        words = ["pytest"]
        for impl in self.impls:
            words += ["--gradlab-impl", impl]
        for kind in self.kinds:
            words += ["--gradlab-kind", kind]
        return shlex.join(words + ["--gradlab-seed", str(self.seed)])


class GradlabImpl(pytest.Collector):
    """The items of one --gradlab-impl."""

    def __init__(self, *, impl, kinds, prefix, **kwargs):
        super().__init__(**kwargs)
        self.impl, self.kinds, self.prefix = impl, kinds, prefix

    def collect(self):
        try:
            found = testing.cases(self.impl, self.kinds or None)
        except UsageError as e:
            if not self.prefix:   # the only file: nothing else could run, a collection error says it best
                raise self.CollectError(f"gradlab: {e}") from None
            # one of several files (a class): a failing item, so the others still run and the
            # aggregated report lists this student too
            nodeid = f"{self.prefix}load"
            yield GradlabLoadError.from_parent(self, name=nodeid, nodeid=nodeid, impl=self.impl, message=str(e))
            return
        for case in found:
            nodeid = f"{self.prefix}{case.kind}::{case.check}"
            yield GradlabItem.from_parent(self, name=nodeid, nodeid=nodeid, case=case)

    def reportinfo(self):
        return self.path, None, self.name


class CheckFailed(Exception):
    """Raised by an item whose check failed; shown as the check's message only."""


class _Item(pytest.Item):
    """What gradlab's items share: a failure shows gradlab's message, not a traceback through gradlab."""

    def repr_failure(self, excinfo, style=None):
        if isinstance(excinfo.value, CheckFailed):
            return str(excinfo.value)
        return super().repr_failure(excinfo, style)

    def reportinfo(self):
        return self.path, None, self.nodeid


class GradlabItem(_Item):
    def __init__(self, *, case, **kwargs):
        super().__init__(**kwargs)
        self.case = case
        self.add_marker("gradlab")

    def runtest(self):
        record, seed = testing.run_case(self.case)
        if record.status == "skip":
            pytest.skip(printable(record.message))
        if not record.ok:
            raise CheckFailed(testing.failure_text(self.case, record, seed))


class GradlabLoadError(_Item):
    """A --gradlab-impl among several that cannot be loaded (syntax error, import
    error, no registration): fails with gradlab's one line, and leaves a record
    so the report lists that file too."""

    def __init__(self, *, impl, message, **kwargs):
        super().__init__(**kwargs)
        self.impl, self.message = impl, message
        self.add_marker("gradlab")

    def runtest(self):
        from gradlab.contract.records import ERROR, CheckRecord
        record = CheckRecord("load", ERROR, self.message)
        testing.set_last_record({"impl": os.fspath(self.impl), "kind": "(load)", "seed": testing.session_seed(),
                                 "config": {}, "record": record.to_dict()})
        where = os.fspath(self.impl)
        message = printable(self.message)
        raise CheckFailed(message if os.path.basename(where) in message else f"{where}: {message}")


def assemble(records, impls=()):
    """The controller's records (in whatever order the workers finished) ->
    [KindResult], ordered as `gradlab check all` would: implementations as
    given, kinds as in `gradlab list`, checks in run order. A (impl, kind,
    check) reported twice is shown once."""
    from gradlab.contract.kinds import KINDS
    from gradlab.contract.records import CheckRecord, KindResult
    from gradlab.contract.suite import all_checks
    check_order = {c.name: i for i, c in enumerate(all_checks())}
    kind_order = {k: i for i, k in enumerate(KINDS)}
    impl_order = {name: i for i, name in enumerate(impls)}
    groups = {}
    for r in records:
        key = (r["impl"], r["kind"])
        group = groups.setdefault(key, KindResult(r["kind"], r["impl"], r["seed"], r["config"]))
        record = CheckRecord.from_dict(r["record"])
        if all(c.name != record.name for c in group.checks):
            group.checks.append(record)
    for group in groups.values():
        group.checks.sort(key=lambda c: check_order.get(c.name, len(check_order)))
    ordered = sorted(groups.items(), key=lambda kv: (impl_order.get(kv[0][0], len(impl_order)), kv[0][0],
                                                      kind_order.get(kv[0][1], len(kind_order))))
    return [group for _, group in ordered]


def _labels(impls):
    """Node ids' prefixes: the file's name, or the path as given when two files share a name."""
    names = [os.path.basename(os.fspath(i)) or os.fspath(i) for i in impls]
    return [n if names.count(n) == 1 else os.fspath(i) for n, i in zip(names, impls)]
