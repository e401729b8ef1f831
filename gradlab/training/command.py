"""`gradlab train`: the command line of gradlab.training (the `gradlab` command
adds this subcommand; nothing heavy is imported until it runs)."""
import sys
import time

EXAMPLES = """\
examples:
  gradlab train                                  gradlab's reference LM, the reverse task
  gradlab train --impl my_attention.py           your attention inside gradlab's LM
  gradlab train --impl my_lm.py --steps 400 --task copy --seed 3 --report lm.html
"""
DEFAULT_REPORT = "reports/train.html"     # (its folder is made; a path given must be in a folder that exists)


def add_parser(sub):
    import argparse
    t = sub.add_parser("train", help="train a tiny LM with your parts on a toy task; HTML report",
                       epilog=EXAMPLES, formatter_class=argparse.RawDescriptionHelpFormatter)
    t.add_argument("--impl", metavar="PATH_OR_MODULE",
                   help="your file: an lm, or parts (attention, ffn, layernorm, block, embedding, positional) "
                        "swapped into gradlab's LM, and your optimizer, schedule, clip_grad_norm, cross_entropy")
    t.add_argument("--steps", type=int, default=200, help="training steps (default 200)")
    t.add_argument("--seed", type=int, default=0, help="seed for the weights and the batches (default 0)")
    t.add_argument("--task", choices=["reverse", "copy"], default="reverse", help="the toy task (default reverse)")
    t.add_argument("--set", dest="overrides", action="append", default=[], metavar="FIELD=VALUE",
                   help="override a size, e.g. --set d_model=64 (defaults: d_model 32, 2 layers, 2 heads, batch 32)")
    t.add_argument("--report", default=DEFAULT_REPORT, metavar="PATH",
                   help=f"where the HTML report goes (default {DEFAULT_REPORT}; a path given must be in a folder "
                        "that exists)")
    t.add_argument("--json", metavar="PATH", help="write the result as JSON to PATH")
    add_isolation_options(t)
    return t


def add_isolation_options(t):
    """--isolate/--in-process and the worker's limits, as `gradlab check` has them."""
    from gradlab.execution import harness, limits
    t.add_argument("--timeout", type=float, default=harness.DEFAULT_TIMEOUT, metavar="SECONDS",
                   help=f"limit for one call into your code (default {harness.DEFAULT_TIMEOUT:g})")
    where = t.add_mutually_exclusive_group()
    where.add_argument("--isolate", dest="isolate", action="store_const", const=True, default=None,
                       help="run your code in a worker process (the default with --impl)")
    where.add_argument("--in-process", dest="isolate", action="store_const", const=False,
                       help="run your code inside gradlab's own process (for debugging; your code can disturb "
                            "gradlab)")
    t.add_argument("--wall-time", type=float, default=limits.DEFAULT_WALL, metavar="SECONDS",
                   help=f"limit for the whole run of your code (default {limits.DEFAULT_WALL:g}; 0: none)")
    t.add_argument("--max-memory", type=float, default=limits.DEFAULT_MEMORY_MB, metavar="MB",
                   help=f"address space of the worker process (default {limits.DEFAULT_MEMORY_MB}; 0: none)")
    t.add_argument("--max-output", type=float, default=limits.DEFAULT_OUTPUT_MB, metavar="MB",
                   help=f"what your code may print (default {limits.DEFAULT_OUTPUT_MB:g}; 0: none)")


class Bar:
    """[#####.....] step 120/200  loss 0.123 on a terminal; nothing elsewhere."""

    def __init__(self, stream):
        from gradlab.frontends.status import StatusLine
        self.line = StatusLine(stream)
        self.last = 0.0

    def __call__(self, step, steps, loss):
        now = time.monotonic()
        if not self.line.enabled or (now - self.last < 0.1 and step < steps):
            return
        self.last = now
        width = min(30, max(10, self.line.columns() - 40))
        done = int(width * step / steps)
        self.line.show(f"[{'#' * done}{'.' * (width - done)}] step {step}/{steps}  loss {loss:.4g}")

    def clear(self):
        self.line.clear()


def replay(args):
    """The command that runs this training again: the same file, steps, task, settings and seed."""
    import shlex
    words = ["gradlab", "train"] + (["--impl", str(args.impl)] if args.impl else [])
    words += ["--steps", str(args.steps), "--task", args.task]
    for pair in args.overrides:
        words += ["--set", pair]
    if args.isolate is not None:
        words += ["--isolate" if args.isolate else "--in-process"]
    return shlex.join(words + ["--seed", str(args.seed)])


def run(args):
    """Exit status: 0 the run passed the bar, 1 it did not (or your code raised), 2 it could not start."""
    from gradlab.execution.runner import time_limit, worker_limits
    from gradlab.frontends.cli import parse_overrides, run_limits
    from gradlab.frontends.report import write_report
    from gradlab.training import train
    from gradlab.contract import options
    from gradlab.contract.records import dumps
    overrides = parse_overrides(args.overrides, None)
    args.seed = options.check_seed(args.seed)      # (as --seed N, not the cfg field a --set would name)
    # where the results go, checked before the training runs (not with a traceback after it)
    options.check_output_path("--report", args.report, DEFAULT_REPORT, make_folders=args.report == DEFAULT_REPORT)
    if args.json is not None:
        options.check_output_path("--json", args.json, "train.json")
    limits = run_limits(args)
    bar = Bar(sys.stderr)
    try:
        with time_limit(args.timeout):
            result = train(args.impl, steps=args.steps, seed=args.seed, task=args.task, progress=bar,
                           isolate=args.isolate, limits=worker_limits(limits), **overrides)
    finally:
        bar.clear()
    record = result.checks[0]
    print(f"{record.status.upper():>5}  {record.message}")
    path = write_report(result, args.report, title=f"gradlab train: {result.impl}", replay=replay(args))
    print(f"report: {path}")
    if args.json:
        with open(args.json, "w", encoding="utf-8") as fh:
            fh.write(dumps(result.to_dict(), indent=1))
    return 0 if result.passed else 1      # a skip (nothing to compare with) is not a pass
