"""The `gradlab` command: a thin layer over gradlab.check.

Exit status: 0 every check passed; 1 a check failed or the student's code
raised inside a check, or nothing was judged (every check skipped); 2 the command could not run (the message says what to fix).
"""
import argparse
import contextlib
import os
import signal
import sys
import time

import gradlab
from gradlab import __version__
from gradlab.execution import harness, limits
from gradlab.contract import options
from gradlab.contract.errors import UsageError
from gradlab.contract.records import dumps
from gradlab.frontends.status import StatusLine
from gradlab.frontends.terminal import escaped_output

EXAMPLES = """\
examples:
  gradlab check attention                          check gradlab's own reference attention
  gradlab check attention --impl my_attention.py   check your module
  gradlab check all --impl my_modules.py --json result.json
  gradlab check attention --impl my_attention.py --report    writes reports/attention.html
  gradlab check ffn --impl my_ffn.py --checks gradient --set d_model=64 --seed 7 -v
  gradlab list                                     kinds, and the checks that apply to each

exit status: 0 all passed, 1 a check failed, your code raised or nothing was judged, 2 the command could not run,
130 interrupted (Ctrl-C), 143 / 129 stopped by SIGTERM / SIGHUP
"""

SYMBOL = {"pass": "PASS", "fail": "FAIL", "error": "ERROR", "skip": "skip"}


class Parser(argparse.ArgumentParser):
    """argparse, with its mistakes said in one line like every other usage error, pointing at the help of
    the command they were made in."""

    def error(self, message):
        self.exit(2, f"{self.prog}: error: {message}; see {self.prog} --help\n")

    def parse_args(self, args=None, namespace=None):
        """As argparse's, but an unknown option is said by the subcommand's parser ("see gradlab check --help"):
        argparse leaves it to the top parser, whose help does not list the subcommand's options."""
        parsed, extra = self.parse_known_args(args, namespace)
        if extra:
            owner = self._subcommands().get(getattr(parsed, "command", None), self)
            owner.error(f"unrecognized arguments: {' '.join(extra)}")
        return parsed

    def _subcommands(self):
        for action in self._actions:
            if isinstance(action, argparse._SubParsersAction):
                return action.choices
        return {}


def build_parser():
    parser = Parser(
        prog="gradlab", description="Verify hand-written NumPy neural-network modules.",
        epilog=EXAMPLES, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--version", action="version", version=f"gradlab {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="{check,list,train,grade,autograder}")

    c = sub.add_parser("check", help="run checks on one kind, or all the kinds a file registers",
                       epilog=EXAMPLES, formatter_class=argparse.RawDescriptionHelpFormatter)
    c.add_argument("kind", help="a kind such as attention, layernorm, adam (see `gradlab list`), several "
                                "separated by commas (attention,ffn), or all")
    c.add_argument("--impl", metavar="PATH_OR_MODULE", action="append",
                   help="your .py file or importable module (default: gradlab's reference implementation)")
    c.add_argument("--checks", metavar="NAMES", action="append",
                   help="comma-separated checks to run, e.g. gradient,causality (given twice: both lists)")
    c.add_argument("--set", dest="overrides", action="append", default=[], metavar="FIELD=VALUE",
                   help="override a cfg field, e.g. --set d_model=64 (repeatable)")
    c.add_argument("--seed", type=int, help="seed for inputs and directions (default: fresh each run, printed)")
    c.add_argument("--dtype", metavar="{float16,float32,float64}", help="dtype the module is built with (default "
                                                                         "float64)")
    c.add_argument("--timeout", type=float, default=harness.DEFAULT_TIMEOUT, metavar="SECONDS",
                   help=f"limit for one call into your code (default {harness.DEFAULT_TIMEOUT:g}; 0 or inf: none)")
    where = c.add_mutually_exclusive_group()
    where.add_argument("--isolate", dest="isolate", action="store_const", const=True, default=None,
                       help="run the code in a worker process (the default with --impl; without it, "
                            "checks gradlab's reference through a worker)")
    where.add_argument("--in-process", dest="isolate", action="store_const", const=False,
                       help="run your code inside gradlab's own process (for debugging; no limits but --timeout, "
                            "and your code can disturb gradlab)")
    c.add_argument("--wall-time", type=float, default=limits.DEFAULT_WALL, metavar="SECONDS",
                   help=f"limit for the whole run of your code, every check (default {limits.DEFAULT_WALL:g}; "
                        "0: none)")
    c.add_argument("--max-memory", type=float, default=limits.DEFAULT_MEMORY_MB, metavar="MB",
                   help=f"address space of the worker process (default {limits.DEFAULT_MEMORY_MB}; 0: none)")
    c.add_argument("--max-output", type=float, default=limits.DEFAULT_OUTPUT_MB, metavar="MB",
                   help=f"what your code may print (default {limits.DEFAULT_OUTPUT_MB:g}; 0: none)")
    c.add_argument("--workers", type=int, metavar="N",
                   help="kinds checked at a time, each with a worker process of its own (default: one per core; "
                        "the records are shown in the same order either way)")
    c.add_argument("--json", metavar="PATH", help="write the result as JSON to PATH")
    c.add_argument("--report", nargs="?", const=True, metavar="PATH",
                   help="write a self-contained HTML report (default: reports/KIND.html, reports/all.html)")
    c.add_argument("--explore", type=int, metavar="N",
                   help="run the checks on N configurations drawn by Hypothesis (T = 1, H = 1, d_k = 1, "
                        "T = max_len, float32...); a failure is shrunk to the smallest configuration showing it; "
                        "one kind, no --json or --report")
    c.add_argument("-v", "--verbose", action="store_true", help="details of every check; tracebacks on errors")

    sub.add_parser("list", help="the kinds, and which checks apply to each",
                   description="Print every kind gradlab checks (what it is, its form) and the checks that apply "
                               "to it, in run order. `gradlab check KIND` runs them.")
    from gradlab.training.command import add_parser as add_train
    add_train(sub)
    from gradlab.frontends import grade_cli
    grade_cli.add_parsers(sub)
    return parser


def _printable_names():
    """A file or folder name that is not UTF-8 (a Latin-1 zip export) reaches gradlab as a str with
    surrogates; printed as \udce9 rather than ending the run with UnicodeEncodeError."""
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.reconfigure(errors="backslashreplace")
        except (AttributeError, ValueError, OSError):
            pass


def main(argv=None):
    _printable_names()
    # every line printed shows control characters escaped (a student's text must not move the cursor or
    # erase lines); escaping outermost, so that StatusLine's own erase codes reach the pipe-safe stream
    with _stdout_survives_a_closed_pipe(), escaped_output():
        return _main(argv)


def _main(argv):
    parser = build_parser()         # (it imports the front ends: Ctrl-C is still gradlab._interrupted_while_starting)
    args = parser.parse_args(argv)
    if args.command is None:
        parser.print_help()
        return 2
    if signal.getsignal(signal.SIGINT) is gradlab._interrupted_while_starting:
        signal.signal(signal.SIGINT, signal.default_int_handler)    # started: Ctrl-C is a KeyboardInterrupt again
    try:
        with _ctrl_c_remembered():
            code = _command(args)
        interrupted()                 # a Ctrl-C Python swallowed on the way (see _ctrl_c_remembered)
        return code
    except UsageError as e:
        print(f"gradlab: error: {e}", file=sys.stderr)
        if getattr(args, "verbose", False) and e.__cause__ is not None:
            import traceback
            text = getattr(e.__cause__, "traceback_text", None)     # from a worker process ("": none to show)
            if text is None:
                traceback.print_exception(e.__cause__)
            elif text:
                print(text, file=sys.stderr)
        return 2
    except KeyboardInterrupt as e:
        return stopped(e)


def parse_overrides(pairs, dtype):
    overrides = {}
    for pair in pairs:
        name, sep, value = pair.partition("=")
        if not sep or not name.strip():
            raise UsageError(f"--set {pair}: write it as FIELD=VALUE, e.g. --set d_model=64")
        if name.strip() == "seed":
            raise options.refuse(f"--set {pair}", "the seed is not a cfg field to set", f"use --seed {value.strip()}")
        name, value = name.strip(), value.strip()
        if name in overrides and overrides[name] != value:     # the last one was kept, silently
            raise options.refuse(f"--set {name}={overrides[name]} --set {pair}", f"{name} is set twice",
                                 "give it once")
        overrides[name] = value
    if dtype is not None:
        if "dtype" in overrides and overrides["dtype"] != dtype:
            raise options.refuse(f"--dtype {dtype} --set dtype={overrides['dtype']}", "the dtype is given twice",
                                 "give --dtype alone")
        overrides["dtype"] = dtype
    return overrides


def _command(args):
    if args.command == "list":
        return cmd_list()
    if args.command == "train":
        from gradlab.training.command import run as cmd_train
        return cmd_train(args)
    from gradlab.frontends import grade_cli
    if args.command in grade_cli.COMMANDS:
        return grade_cli.run(args)
    return cmd_check(args)


class Terminated(KeyboardInterrupt):
    """SIGTERM or SIGHUP (`kill`, `timeout`, a closed terminal, a batch system's end of job). A
    KeyboardInterrupt, so that every path that stops the workers, lanes and grading jobs and removes their
    folders on Ctrl-C does the same for it; main() then exits 128 + the signal's number."""

    def __init__(self, signum):
        super().__init__(signum)
        self.signum = signum


TERMINATING = (signal.SIGTERM, signal.SIGHUP)
_CTRL_C = {"seen": None}        # the signal number of the Ctrl-C, SIGTERM or SIGHUP that stops the run


def _stop_exception(signum):
    return KeyboardInterrupt() if signum == signal.SIGINT else Terminated(signum)


def interrupted():
    """Raise KeyboardInterrupt if Ctrl-C (or SIGTERM, SIGHUP) came and Python swallowed it (a front end calls
    this between checks)."""
    if _CTRL_C["seen"]:
        raise _stop_exception(_CTRL_C["seen"])


def stopped(exc):
    """A run stopped by Ctrl-C (exit 130) or by SIGTERM / SIGHUP (128 + its number): the workers stopped,
    one line."""
    from gradlab.execution.remote import close_all
    close_all()            # the workers, and whatever they started
    signum = getattr(exc, "signum", signal.SIGINT)
    print("gradlab: interrupted" if signum == signal.SIGINT else "gradlab: terminated", file=sys.stderr)
    return 128 + signum


@contextlib.contextmanager
def _ctrl_c_remembered():
    """Ctrl-C raises KeyboardInterrupt as ever, and is also remembered: one raised inside a weakref or gc
    callback is printed as 'Exception ignored in ...' and swallowed, and the run would go on to exit 0.
    Remembered, it ends the run at the next record, or at its end: exit 130 either way.
    SIGTERM and SIGHUP are handled the same way (Terminated), where nobody ignores them (nohup). Each signal on
    its own: a caller's own handler, or one ignored, is left alone (a script's background job starts with SIGINT
    ignored, and its SIGTERM left the worker running when the three were left alone together)."""
    import threading
    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def handler(signum, frame):
        if _CTRL_C["seen"] in TERMINATING:
            return         # `timeout` sends SIGTERM twice (to gradlab, then to its group): let the stop finish
        _CTRL_C["seen"] = signum
        raise _stop_exception(signum)
    _CTRL_C["seen"] = None
    interrupt = signal.getsignal(signal.SIGINT) is signal.default_int_handler
    ours = [sig for sig in TERMINATING if signal.getsignal(sig) is signal.SIG_DFL]
    for sig in [signal.SIGINT] * interrupt + ours:
        signal.signal(sig, handler)
    try:
        yield
    finally:
        if interrupt:
            signal.signal(signal.SIGINT, signal.default_int_handler)
        for sig in ours:
            # stopping: one more SIGTERM may already be on its way (`timeout` sends two; stopping a grading job's
            # group): ignored by a handler that does nothing, so that the stop finishes and says its one line
            signal.signal(sig, harness.ignore_signal if _CTRL_C["seen"] else signal.SIG_DFL)


class _PipeSafe:
    """stdout that outlives its reader (`gradlab check ... | head`): once the pipe is closed, what is
    printed goes nowhere, and the run goes on to its files and its real exit status."""

    def __init__(self, stream):
        self._stream, self._broken = stream, False

    def write(self, text):
        if not self._broken:
            try:
                return self._stream.write(text)
            except BrokenPipeError:
                self._gone()
        return len(text)

    def flush(self):
        if not self._broken:
            try:
                self._stream.flush()
            except BrokenPipeError:
                self._gone()

    def _gone(self):
        self._broken = True
        try:
            os.dup2(os.open(os.devnull, os.O_WRONLY), self._stream.fileno())   # (Python's own flush at exit)
        except (OSError, ValueError, AttributeError):
            pass

    def __getattr__(self, name):
        return getattr(self._stream, name)


@contextlib.contextmanager
def _stdout_survives_a_closed_pipe():
    stream = sys.stdout
    sys.stdout = _PipeSafe(stream)
    try:
        yield
    finally:
        if isinstance(sys.stdout, _PipeSafe):
            sys.stdout = stream


def run_limits(args):
    """The worker's limits from the command line; a bad value is a usage error
    (--timeout is checked with the run, by options.check_timeout)."""
    wall, memory, output = (options.check_limit(flag, value) for flag, value in (
        ("--wall-time", args.wall_time), ("--max-memory", args.max_memory), ("--max-output", args.max_output)))
    # fork=True: this process is gradlab's own (it never imports the student's code), as a grading job
    # is, so a worker may be forked from it where zygote.refusal finds nothing against it (README)
    # spin=True: one worker at a time (Limits.spins)
    return limits.Limits(timeout=args.timeout, wall=wall, memory_mb=memory, output_mb=output, fork=True, spin=True)


def cmd_check(args):
    from gradlab.execution.plan import Plan
    from gradlab.execution.runner import run, time_limit, worker_limits
    args.impl = one_impl(args.impl)
    if args.checks is not None:      # --checks a --checks b: both (the last alone was kept, silently)
        args.checks = ",".join(args.checks)
    overrides = parse_overrides(args.overrides, args.dtype)
    # output paths are checked before the checks run, not with a traceback after them
    if args.json is not None:
        options.check_output_path("--json", args.json, "result.json")
    report_path = report_shown = None
    if args.report is not None:
        name = args.kind if "," not in args.kind else "all"
        report_path = args.report if isinstance(args.report, str) else os.path.join("reports", f"{name}.html")
        report_shown = report_path     # as given (relative), for the line that says where it went
        # a path given must be in a folder that exists, as for --json; the default's reports/ is made
        options.check_output_path("--report", report_path, f"reports/{name}.html",
                                  make_folders=not isinstance(args.report, str))
    if args.json is not None and report_path and os.path.abspath(args.json) == os.path.abspath(report_path):
        raise options.refuse(f"--json {args.json} --report {report_path}", "both write the same file",
                             "give them different names")
    for flag, path in (("--json", args.json), ("--report", report_path)):
        if path is not None and args.impl and os.path.exists(path) and os.path.exists(args.impl) \
                and os.path.samefile(path, args.impl):
            raise options.refuse(f"{flag} {path}", "it is the file being checked (--impl), which it would "
                                 "overwrite", "write the result to another file")
    run_limits_ = run_limits(args)
    options.check_workers(args.workers)
    # where results go is fixed before any student code runs (code run in-process may os.chdir)
    json_path = os.path.abspath(args.json) if args.json is not None else None
    if report_path:
        report_path = os.path.abspath(report_path)
    if args.explore is not None:
        return cmd_explore(args, overrides, run_limits_)
    progress = None

    def on_record(kind_result, record):
        interrupted()
        progress.clear()
        print_record(kind_result, record, args.verbose)
        progress.update(kind_result)

    harness.set_quiet(not args.verbose)   # student print()s would bury the one line per check
    try:
        with time_limit(args.timeout):   # importing the file is under the limit too
            plan = Plan(args.impl, kinds=args.kind, checks=args.checks, seed=args.seed, overrides=overrides,
                        isolate=args.isolate, limits=worker_limits(run_limits_), workers=args.workers)
            try:
                progress = Progress(sys.stdout, plan)
                outcome = run(plan, on_record)
            finally:
                plan.close()       # the workers are stopped before any result is written
    finally:
        if progress:
            progress.clear()
        printed = harness.printed_lines()
        harness.set_quiet(False)
    kind_results = outcome.results
    result = outcome if args.kind == "all" or len(kind_results) > 1 else kind_results[0]
    for r in kind_results:
        n = r.counts()
        print(f"{r.kind} ({r.impl}): {n['pass']} passed, {n['fail']} failed, {n['error']} errors, "
              f"{n['skip']} skipped; seed {r.seed}" + ("; nothing was judged: every check asked for was skipped "
                                                      "(the reasons are above), so this is not a pass"
                                                      if r.nothing_judged else ""))
    if len(kind_results) > 1:
        total = {k: sum(r.counts()[k] for r in kind_results) for k in ("pass", "fail", "error", "skip")}
        failing = [r.kind for r in kind_results if not r.passed]
        print(f"all {len(kind_results)} kinds: {total['pass']} passed, {total['fail']} failed, {total['error']} errors, "
              f"{total['skip']} skipped" + (f"; not passing: {', '.join(failing)}" if failing else ""))
    if printed:
        print(f"(your code printed {printed} line{'' if printed == 1 else 's'} while it was checked; -v shows "
              f"{'it' if printed == 1 else 'them'})")
    if json_path:
        with _writing("--json", args.json):
            with open(json_path, "w") as fh:
                fh.write(dumps(result.to_dict(), indent=2))
    if report_path:
        from gradlab.frontends.report import write_report   # jinja2 and matplotlib: only when a report is asked for
        with _writing("--report", report_shown):
            write_report(result, report_path, replay=plan.replay())
        print(f"report: {report_shown}")
    if not result.passed:
        print(f"replay with: {plan.replay() or f'--seed {kind_results[0].seed}'}")
    return 0 if result.passed else 1


@contextlib.contextmanager
def _writing(flag, shown):
    """A result file that fails to be written after the run (a full disk: the probe before the run
    writes nothing): one line, exit 2, as any option that cannot be honoured."""
    try:
        yield
    except OSError as e:
        raise options.refuse(f"{flag} {shown}", f"could not be written after the checks ran "
                             f"({e.strerror or e})", "free space there or choose another path") from None


def cmd_explore(args, overrides, run_limits_=None):
    """--explore N: the checks on N drawn configurations; the smallest failing one as a replay line."""
    from gradlab.contract.config import make_config
    from gradlab.contract.kinds import get_kind
    from gradlab.execution import explore, runner
    from gradlab.execution.plan import Plan
    n = options.check_explore(args.explore)
    if args.kind == "all" or "," in args.kind:
        raise options.refuse(f"check {args.kind} --explore", "--explore explores one kind at a time",
                             "e.g. gradlab check attention --explore 20")
    get_kind(args.kind)
    for flag, value in (("--json", args.json), ("--report", args.report)):
        if value is not None:
            raise options.refuse(f"--explore with {flag}", "an exploration writes no JSON or report",
                                 f"replay the configuration it prints with {flag}")
    typed = make_config(**overrides)
    fixed = {name: getattr(typed, name) for name in overrides}
    harness.set_quiet(not args.verbose)
    try:
        with runner.time_limit(args.timeout):
            # the options and the file, checked and loaded once, before any configuration runs
            # --isolate/--in-process and the worker's limits as for a plain check; one worker for every draw
            plan = Plan(args.impl, kinds=[args.kind], checks=args.checks, seed=args.seed, overrides=overrides,
                        isolate=args.isolate, limits=runner.worker_limits(run_limits_))
            try:
                print(f"exploring {args.kind} ({args.impl or 'reference'}) on up to {n} configurations drawn by "
                      f"Hypothesis; seed {plan.seed}")
                found = explore.explore(args.kind, n, impl=args.impl, checks=args.checks, seed=plan.seed,
                                        fixed=fixed, loaded=plan.loaded)
            finally:
                plan.close()       # the worker is stopped before the result is printed
    finally:
        harness.set_quiet(False)
    if found.passed:
        print(f"{args.kind}: every check passed on {len(found.drawn)} configurations "
              f"({_ranges(found.drawn)})")
        return 0
    where = " ".join(f"{k}={v}" for k, v in found.config.items()) or "the default sizes"
    print(f"{args.kind}: {', '.join(found.failing)} failed; the smallest configuration that fails the same way "
          f"(shrunk by Hypothesis after {found.tried} runs): {where}")
    for record in found.result.checks:
        if not record.ok:
            print_record(found.result, record, args.verbose)
    print(f"replay with: {found.replay}")
    return 1


def _ranges(drawn):
    """'batch_size 1..3, seq_len 1..6, dtype float32/float64': what the configurations covered."""
    parts = []
    for name in dict.fromkeys(k for cfg in drawn for k in cfg):
        values = sorted({cfg[name] for cfg in drawn if name in cfg}, key=str)
        if all(isinstance(v, (int, float)) for v in values):
            low, high = min(values), max(values)
            parts.append(f"{name} {low:g}" + (f"..{high:g}" if high != low else ""))
        else:
            parts.append(f"{name} {'/'.join(map(str, values))}")
    return ", ".join(parts)


def one_impl(impls):
    """--impl given once (or not at all). Twice would silently check only the
    last file; say how to check several instead."""
    if not impls:
        return None
    if len(impls) > 1:
        raise UsageError(f"--impl is given {len(impls)} times ({', '.join(impls)}); `gradlab check` checks one "
                         "file: to grade several, put them in a folder and run `gradlab grade FOLDER --kinds ...`, "
                         "or `pytest --gradlab-impl a.py --gradlab-impl b.py`")
    return impls[0]


class Progress:
    """One status line under the results while checks run ("[12 done, 1.4 s]
    running attention::gradient (3/8)"), rewritten in place. Only on a
    terminal, and only once the run has taken DELAY seconds: short runs and
    output to files or pipes look exactly as without it."""
    DELAY = 0.5

    def __init__(self, stream, plan):
        self.line = StatusLine(stream)
        self.plan = plan
        self.start = time.monotonic()
        self.done = 0

    def update(self, kind_result):
        self.done += 1
        elapsed = time.monotonic() - self.start
        if not self.line.enabled or elapsed < self.DELAY:
            return
        names = [c.name for c in self.plan.checks_for(kind_result.kind)]
        position = len(kind_result.checks)
        doing = (f"running {kind_result.kind}::{names[position]} ({position + 1}/{len(names)})"
                 if position < len(names) else f"{kind_result.kind} done")
        self.line.show(f"[{self.done} done, {elapsed:.1f} s] {doing}")

    def clear(self):
        self.line.clear()


def print_record(kind_result, record, verbose):
    print(f"{SYMBOL[record.status]:>5}  {kind_result.kind}::{record.name:<18} {record.message}")
    if verbose and record.metrics:
        for key, value in record.metrics.items():
            print(f"{'':26}{key}: {value}")
    if verbose and record.details.get("traceback"):
        print("\n".join(f"{'':26}{line}" for line in record.details["traceback"].split("\n")))


def cmd_list():
    from gradlab.contract.kinds import KINDS
    from gradlab.contract.suite import all_checks
    checks = all_checks()
    width = max(len(k) for k in KINDS)
    print(f"{'kind':<{width}}  checks")
    for name, spec in KINDS.items():
        applicable = [c.name for c in checks if c.applies(spec)]
        print(f"{name:<{width}}  {', '.join(applicable)}")
        print(f"{'':<{width}}  ({spec.summary})")
    print("\nchecks:")
    for c in checks:
        print(f"  {c.name:<18} {c.summary}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
