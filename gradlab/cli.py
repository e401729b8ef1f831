"""The `gradlab` command: a thin layer over gradlab.check.

Exit status: 0 every check passed; 1 a check failed or the student's code
raised inside a check; 2 the command could not run (the message says what to fix).
"""
import argparse
import json
import sys

from . import harness
from .errors import UsageError

EXAMPLES = """\
examples:
  gradlab check attention                          check gradlab's own reference attention
  gradlab check attention --impl my_attention.py   check your module
  gradlab check all --impl my_modules.py --json result.json
  gradlab check ffn --impl my_ffn.py --checks gradient --set d_model=64 --seed 7 -v
  gradlab list                                     kinds, and the checks that apply to each

exit status: 0 all passed, 1 a check failed or your code raised, 2 the command could not run
"""

SYMBOL = {"pass": "PASS", "fail": "FAIL", "error": "ERROR", "skip": "skip"}


def build_parser():
    parser = argparse.ArgumentParser(
        prog="gradlab", description="Verify hand-written NumPy neural-network modules.",
        epilog=EXAMPLES, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = parser.add_subparsers(dest="command", metavar="{check,list}")

    c = sub.add_parser("check", help="run checks on one kind, or all the kinds a file registers",
                       epilog=EXAMPLES, formatter_class=argparse.RawDescriptionHelpFormatter)
    c.add_argument("kind", help="a kind such as attention, layernorm, adam (see `gradlab list`), or all")
    c.add_argument("--impl", metavar="PATH_OR_MODULE",
                   help="your .py file or importable module (default: gradlab's reference implementation)")
    c.add_argument("--checks", metavar="NAMES", help="comma-separated checks to run, e.g. gradient,causality")
    c.add_argument("--set", dest="overrides", action="append", default=[], metavar="FIELD=VALUE",
                   help="override a cfg field, e.g. --set d_model=64 (repeatable)")
    c.add_argument("--seed", type=int, help="seed for inputs and directions (default: fresh each run, printed)")
    c.add_argument("--dtype", choices=["float32", "float64"], help="dtype the module is built with")
    c.add_argument("--timeout", type=float, default=harness.DEFAULT_TIMEOUT, metavar="SECONDS",
                   help=f"limit for one call into your code (default {harness.DEFAULT_TIMEOUT:g})")
    c.add_argument("--json", metavar="PATH", help="write the result as JSON to PATH")
    c.add_argument("-v", "--verbose", action="store_true", help="details of every check; tracebacks on errors")

    sub.add_parser("list", help="the kinds, and which checks apply to each")
    return parser


def main(argv=None):
    parser = build_parser()
    args = parser.parse_args(argv)
    if args.command is None:
        parser.print_help()
        return 2
    try:
        if args.command == "list":
            return cmd_list()
        return cmd_check(args)
    except UsageError as e:
        print(f"gradlab: error: {e}", file=sys.stderr)
        if getattr(args, "verbose", False) and e.__cause__ is not None:
            import traceback
            traceback.print_exception(e.__cause__)
        return 2
    except KeyboardInterrupt:
        print("gradlab: interrupted", file=sys.stderr)
        return 130


def parse_overrides(pairs, dtype):
    overrides = {}
    for pair in pairs:
        name, sep, value = pair.partition("=")
        if not sep or not name.strip():
            raise UsageError(f"--set {pair}: write it as FIELD=VALUE, e.g. --set d_model=64")
        overrides[name.strip()] = value.strip()
    if dtype:
        overrides["dtype"] = dtype
    return overrides


def cmd_check(args):
    from .runner import check
    overrides = parse_overrides(args.overrides, args.dtype)
    result = check(args.kind, impl=args.impl, checks=args.checks, seed=args.seed, timeout=args.timeout,
                   on_record=lambda kind_result, record: print_record(kind_result, record, args.verbose),
                   **overrides)
    kind_results = getattr(result, "results", [result])
    for r in kind_results:
        n = r.counts()
        print(f"{r.kind} ({r.impl}): {n['pass']} passed, {n['fail']} failed, {n['error']} errors, "
              f"{n['skip']} skipped; seed {r.seed}")
    if args.json:
        with open(args.json, "w") as fh:
            json.dump(result.to_dict(), fh, indent=2)
    if not result.passed:
        print(f"replay with: --seed {kind_results[0].seed}")
    return 0 if result.passed else 1


def print_record(kind_result, record, verbose):
    print(f"{SYMBOL[record.status]:>5}  {kind_result.kind}::{record.name:<18} {record.message}")
    if verbose and record.metrics:
        for key, value in record.metrics.items():
            print(f"{'':26}{key}: {value}")
    if verbose and record.details.get("traceback"):
        print("\n".join(f"{'':26}{line}" for line in record.details["traceback"].splitlines()))


def cmd_list():
    from .kinds import KINDS
    from .suite import all_checks
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
